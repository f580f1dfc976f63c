/** `mcpmgr run`: start an MCP server as a managed workload behind the proxy. */
import { defineCommand } from "citty";
import { parseRunArgv, type ParsedRunArgv } from "../config/run-argv.ts";
import { runOptions } from "../config/run-options.ts";
import { McpmgrError } from "../errors.ts";
import { writeForegroundUrl } from "../state/foreground-runs.ts";
import { assertGroupName } from "../state/workload-name.ts";
import { isGatewayRecord, type WorkloadRecord } from "../state/workload-record.ts";
import { workloadUrl } from "../state/workload-url.ts";
import { WorkloadStore } from "../state/workloads.ts";
import { assertNameFree, preflight, recordWorkload } from "../workload/background.ts";
import { clientsSeeForegroundRun } from "../workload/client-entries.ts";
import type { WorkloadContext } from "../workload/context.ts";
import {
  argsFromConfig,
  assertFieldsAgree,
  exportedGatewaySpec,
  fromConfigRuntime,
  portDisagreement,
  readExported,
  replayEnvironment,
} from "../workload/exported-config.ts";
import {
  abandonStart,
  assertForegroundNameFree,
  assertForegroundRunServed,
  refusedWhenGuarded,
  stillStartingNotice,
  watchForegroundGuard,
} from "../workload/foreground.ts";
import { remoteAskedAtStart, warnIfRemoteHostUnresolved } from "../workload/remote-host.ts";
import { prepareRunSpec, type RunSpec } from "../workload/run-spec.ts";
import { portInUse } from "../proxy/serve.ts";
import { startWorkload } from "../workload/start.ts";
import { firstStart } from "../workload/first-start.ts";
import { startFailureCode } from "../workload/supervisor-control.ts";
import { toCittyArgs, withExamples } from "./citty-args.ts";
import { cliContext } from "./context.ts";
import { startRelay } from "./start-relay.ts";
import { log, printResult } from "./output.ts";
import { type ListenerProtections, warnIfReachable } from "./reachable-notice.ts";
import { cancelOnSignal, signalExitCode, untilSignal } from "./signals.ts";

const runCommand = defineCommand({
  meta: {
    name: "run",
    description:
      "Run an MCP server (registry name, image, npx:// uvx:// go:// package, exported config or URL) behind an HTTP proxy",
  },
  args: toCittyArgs(runOptions, {
    SERVER_OR_IMAGE_OR_PROTOCOL: {
      description:
        "Registry name, image reference, npx:// uvx:// go:// package, or URL; the server's own arguments go after --",
      required: false,
      completes: "servers",
    },
  }),
  async run({ rawArgs }) {
    const parsed = parseRunArgv(rawArgs);
    if (parsed.values["from-config"] !== undefined) {
      const others = [...parsed.given].filter((name) => name !== "from-config" && name !== "foreground");
      if (others.length > 0) {
        throw new McpmgrError(
          "CONFLICTING_OPTIONS",
          `--from-config runs the exported configuration as it is; --${others[0]} would be ignored`,
          { hint: "edit the exported file instead, or run the server with its options directly" },
        );
      }
      const file = parsed.values["from-config"];
      const record = await readExported(file);
      try {
        if (isGatewayRecord(record)) return await runGatewayFromConfig(record, parsed.values.foreground);
        const env = replayEnvironment(record, process.env, file);
        const args = argsFromConfig(record, parsed.values.foreground);
        const replayed = parseRunArgv(args);
        assertReplayable(replayed, record, file);
        assertFieldsAgree(record, replayed, file);
        // The name first: a workload of this name that runs holds this port too.
        const store = new WorkloadStore(cliContext().paths);
        await assertNameFree(store, record.name);
        await assertFilePortFree(replayed, file, store);
        // Said once the file is taken: a refusal above is the one line the user needs.
        const portNote = portDisagreement(record, replayed, file);
        if (portNote !== undefined) log.warn(portNote);
        return await runParsed(args, replayed, cliContext({ env }));
      } catch (err) {
        throw fromConfigRuntime(
          fromConfigPortTaken(fromConfigNameTaken(err, record.name, file), file),
          record,
          file,
          process.env,
        );
      }
    }
    await runParsed(rawArgs, parsed);
  },
});

async function runParsed(args: readonly string[], parsed: ParsedRunArgv, ctx = cliContext()): Promise<void> {
  // The name is checked before the placement speaks (a warning about a server that will not run), for a
  // foreground run too: its claim refuses a recorded or running name, but only after the placement.
  const store = new WorkloadStore(ctx.paths);
  const spec = await prepareRunSpec(parsed, ctx, { nameFree: (name) => assertNameFree(store, name) });
  if (spec.background) return runInBackground(spec, parsed, args, ctx);
  const code = await runInForeground(spec, ctx);
  if (code !== 0) process.exit(code);
}

/** An exported file's run options as what ran: refused when edited into something a replay cannot honour. */
function assertReplayable(parsed: ParsedRunArgv, record: WorkloadRecord, file: string): void {
  // An export's run options are what ran; one naming another file is an edited file, not a chain to follow.
  if (parsed.given.has("from-config")) {
    throw new McpmgrError(
      "INVALID_OPTION",
      `--from-config ${file}: its runOptions hold --from-config, which cannot be replayed`,
      {
        hint: "put the server and its options in runOptions, or export the workload again with 'mcpmgr export NAME PATH'",
      },
    );
  }
  // Likewise the name: an export's run options always name it; a "name" edited alone would be checked,
  // hinted at and listed as one name while the workload took the other.
  if (parsed.values.name !== undefined && parsed.values.name !== record.name) {
    throw new McpmgrError(
      "INVALID_OPTION",
      `--from-config ${file}: its "name" is ${JSON.stringify(record.name)}, but its runOptions name the workload ${JSON.stringify(parsed.values.name)}`,
      { hint: `make them agree: the --name value in "runOptions" is the name the workload gets` },
    );
  }
  // What runs is the run options' --group (a name no group can have refused first, never echoed in a
  // hint): a "group" that says otherwise was edited, and would mislead.
  assertGroupName(parsed.values.group);
  if (parsed.values.group !== record.group) {
    throw new McpmgrError(
      "INVALID_OPTION",
      `--from-config ${file}: its "group" is ${JSON.stringify(record.group)}, but its runOptions run the workload in ${JSON.stringify(parsed.values.group)}`,
      { hint: "make them agree: the runOptions' --group is the group the workload joins" },
    );
  }
}

/** A taken name, for a run that cannot take --name: the way out is the file's "name". */
function fromConfigNameTaken(err: unknown, name: string, file: string): unknown {
  if (!(err instanceof McpmgrError) || startFailureCode(err) !== "WORKLOAD_EXISTS") return err;
  const another = `edit the --name value in "runOptions" of ${file} (and "name" with it) to run another copy`;
  // Taken by a foreground run (state/workloads.ts assertNoForegroundRun), by a record, or on the engine (the
  // container or network name, by another installation's workload or a container not mcpmgr's: as the
  // supervisor's failed start reports it, or a foreground run's launch).
  const hint = err.message.startsWith("a foreground run named")
    ? `stop it (Ctrl-C where it runs), or ${another}`
    : err.message.startsWith("a workload named")
      ? `'mcpmgr list' shows it; start it with 'mcpmgr start ${name}' if it is stopped, remove it with 'mcpmgr rm ${name}', or ${another}`
      : `free that name where it is held (stop or remove what holds it, if it is not needed), or ${another}`;
  return new McpmgrError(err.code, err.message, { hint, ...(err.details ? { details: err.details } : {}) });
}

/**
 * Checked before the pre-flight (a copy of an exported workload meets the port the first one keeps,
 * or another program's): refused at once, with the file's way out (fromConfigPortTaken).
 */
async function assertFilePortFree(parsed: ParsedRunArgv, file: string, store: WorkloadStore): Promise<void> {
  const port = parsed.values["proxy-port"];
  if (port === undefined) return;
  const keeper = (await store.keptPorts()).find((other) => other.proxyPort === port);
  if (keeper !== undefined) {
    throw new McpmgrError(
      "PORT_IN_USE",
      `proxy port ${port} (from ${file}) is already reserved by workload ${keeper.name}`,
    );
  }
  if (portInUse(port, parsed.values.host)) {
    throw new McpmgrError("PORT_IN_USE", `port ${port} on ${parsed.values.host} (from ${file}) is already in use`);
  }
}

/** A taken port, for a run that cannot take --proxy-port: the way out is the file's runOptions. */
function fromConfigPortTaken(err: unknown, file: string): unknown {
  if (!(err instanceof McpmgrError) || err.code !== "PORT_IN_USE") return err;
  return new McpmgrError("PORT_IN_USE", err.message, {
    hint: `edit the --proxy-port value in "runOptions" of ${file}, or take --proxy-port and its value out of them to get a free port`,
  });
}

export default withExamples(runCommand, [
  { description: "Run the fetch server from the registry in the background", command: "mcpmgr run fetch" },
  {
    description: "Run an npm package in the foreground on a chosen port (Ctrl-C stops it)",
    command: "mcpmgr run npx://@modelcontextprotocol/server-everything --foreground --proxy-port 8080",
  },
  {
    description: "Put a remote server behind the proxy, logging in with OAuth, in the group 'work'",
    command: "mcpmgr run https://mcp.example.com/mcp --name example --remote-auth --group work",
  },
]);

/** An exported background gateway runs as `mcpmgr gateway ... --detach` made it. */
async function runGatewayFromConfig(record: WorkloadRecord, foreground: boolean): Promise<void> {
  const spec = await exportedGatewaySpec(record, foreground);
  const { runGatewayInBackground } = await import("./gateway.ts");
  await runGatewayInBackground(spec, record.runOptions, cliContext());
}

/** Checked and prepared here, recorded, then handed to a supervisor; prints the URL and returns. */
async function runInBackground(
  spec: RunSpec,
  parsed: ParsedRunArgv,
  args: readonly string[],
  ctx: WorkloadContext,
): Promise<void> {
  const store = new WorkloadStore(ctx.paths);
  await assertNameFree(store, spec.name);
  // Ctrl-C here ends a pull, a build or the wait for another run's build of the same image at once,
  // with the usual line; nothing is recorded yet. Checked again after: a step that does not listen
  // for the signal must not lead on to recording the workload.
  const said = await cancelOnSignal(spec.name, async (signal) => {
    const done = await preflight(spec, ctx, signal);
    signal.throwIfAborted();
    return done;
  });
  const record = await recordWorkload(spec, parsed, args, store);
  // The supervisor's set-ID warning is the preflight's again (said once), unless only its look-up found no profile.
  const relay = startRelay(store.logFiles(spec.name, "proxy"), "", { setIdExposureShown: said.setIdExposure });
  // Read to the end also when the start fails (before a first start's log is removed with it): a
  // warning written a moment before the failure is not lost.
  await cancelOnSignal(spec.name, (signal) =>
    firstStart(record, ctx, { whileWaiting: relay.whileWaiting, signal, onFailure: () => relay.ready() }),
  );
  await relay.ready();
  log.info(`${spec.name} is running in the background ('mcpmgr stop ${spec.name}' stops it); MCP clients connect to:`);
  printResult(workloadUrl(record));
  warnIfReachable(spec.name, spec.listen.host, workloadUrl(record), reachableProtections(spec));
}

/**
 * Blocks until Ctrl-C or until the server exits; returns the exit code. Its name is taken
 * while it runs: no record may have it, and no background run can take it meanwhile.
 */
async function runInForeground(spec: RunSpec, ctx: WorkloadContext): Promise<number> {
  assertForegroundRunServed(spec, ctx);
  const release = await new WorkloadStore(ctx.paths).claimForegroundName(spec.name);
  try {
    return await serveInForeground(spec, ctx);
  } finally {
    await release();
  }
}

/** How long a cancelled foreground start may take to wind down (a cancelled build waits for its engine). */
const START_WIND_DOWN_MS = 15_000;

async function serveInForeground(spec: RunSpec, ctx: WorkloadContext): Promise<number> {
  await assertForegroundNameFree(spec, ctx);
  if (spec.placement.kind === "remote") {
    await warnIfRemoteHostUnresolved(spec.name, spec.placement.url, ctx, {
      askedAtStart: remoteAskedAtStart(spec.placement.outgoingAuth),
    });
  }
  // Listened for from the start: Ctrl-C during a pull, build or handshake must not leave a
  // container running, nor a build's step images. The start is told (a build is cancelled and
  // removes what it made) and given a while to wind down; a second Ctrl-C exits at once.
  const signal = untilSignal();
  const cancel = new AbortController();
  void signal.then((received) => cancel.abort(received));
  const starting = startWorkload(spec, ctx, {
    signal: cancel.signal,
    stillStarting: stillStartingNotice(spec, ctx, log.level >= 4),
  });
  const started = await Promise.race([
    starting.then((workload) => ({ workload })),
    signal.then((received) => ({ received })),
  ]);
  if ("received" in started) {
    log.info(
      `${started.received}: stopping ${spec.name} while it starts${started.received === "SIGINT" ? " (Ctrl-C again quits at once)" : ""}`,
    );
    // The workload's containers are asked to go at once, as before the start was given time to wind
    // down: a second Ctrl-C a moment later (the usual impatience) exits before the wind-down ends,
    // and would leave a container that was up already running for good.
    const removing = abandonStart(spec, ctx);
    const late = await Promise.race([starting.catch(() => undefined), Bun.sleep(START_WIND_DOWN_MS)]);
    // Started in the instant before it heard: stopped like any other.
    if (late) await late.stop();
    await removing;
    // Again: one created while the first removal ran.
    await abandonStart(spec, ctx);
    log.info(`${started.received}: stopped ${spec.name} while it was starting`);
    return signalExitCode(started.received);
  }
  const { workload } = started;
  log.info(`${spec.name} is running; MCP clients connect to:`);
  printResult(workload.url);
  warnIfReachable(spec.name, spec.listen.host, workload.url, reachableProtections(spec));
  // Written into the AI clients following its group while it runs (no record: its pid says it lives).
  // Claude Desktop's entry (`proxy stdio NAME`) finds the URL in the name's claim.
  await writeForegroundUrl(ctx.paths, spec.name, workload.url, {
    group: spec.group,
    refusedWhenGuarded: refusedWhenGuarded(spec),
    host: spec.listen.host,
  });
  const leaveClients = await clientsSeeForegroundRun(spec, workload.url, ctx);
  // A gateway with policies may have started for its group meanwhile, or start later: said once, with the way out.
  const stopWatching = watchForegroundGuard(spec, ctx);
  const outcome = await Promise.race([
    signal.then((received) => ({ signal: received })),
    workload.exited.then((why) => ({ why })),
  ]);
  stopWatching();
  await leaveClients();
  await workload.stop();
  if ("why" in outcome) {
    log.error(`${spec.name}: ${outcome.why}`);
    return 1;
  }
  log.info(`${outcome.signal}: stopped ${spec.name}`);
  return 0;
}

function reachableProtections(spec: RunSpec): ListenerProtections {
  return {
    issuer: spec.policies.incomingAuth?.issuer,
    authz: spec.policies.authz !== undefined,
    metrics: spec.policies.telemetry?.prometheus === true,
  };
}
