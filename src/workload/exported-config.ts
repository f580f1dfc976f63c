/**
 * `run --from-config PATH`: an exported record holds the run options as they were validated;
 * they are parsed again by the caller, so an edited file gets the same checks as a command line.
 * Relative paths in it are taken from its working directory.
 */
import { existsSync } from "node:fs";
import { readlink, realpath, stat } from "node:fs/promises";
import { FileTooLarge, readCappedFile } from "../bounded-file.ts";
import { dirname, join, resolve } from "node:path";
import { errorMessage, McpmgrError } from "../errors.ts";
import { shellWord } from "../printable.ts";
import { readJsonFile, writeFileAtomic } from "../state/atomic-file.ts";
import { isValidWorkloadName } from "../state/workload-name.ts";
import { type WorkloadRecord, workloadRecordSchema } from "../state/workload-record.ts";
import { listenAddress } from "../config/loopback.ts";
import type { ParsedRunArgv } from "../config/run-argv.ts";
import type { Env } from "./context.ts";

/** The exported record at `path`, checked; the process moves to its working directory. */
export async function readExported(path: string): Promise<WorkloadRecord> {
  const record = await readJsonFile(path, workloadRecordSchema, {
    hint: "export one with 'mcpmgr export NAME PATH'",
    refuseDuplicateKeys: true,
  });
  if (record === undefined)
    throw new McpmgrError("INVALID_OPTION", `--from-config ${JSON.stringify(path)}: no such file`, {
      hint: "give the path of an exported configuration",
    });
  if (record.runOptions.length === 0) {
    throw new McpmgrError("INVALID_OPTION", `--from-config ${path}: the file has no run options`, {
      hint: "export it again with 'mcpmgr export NAME PATH'",
    });
  }
  if (record.workingDir) {
    // Moved to another machine: its relative paths (-v ./data, npx://./server) mean nothing here.
    if (!existsSync(record.workingDir)) {
      throw new McpmgrError(
        "INVALID_OPTION",
        `--from-config ${path}: its working directory ${record.workingDir} does not exist here`,
        {
          hint: `the file's relative paths are taken from there: create it, or set "workingDir" in the file to the folder they are relative to`,
        },
      );
    }
    process.chdir(record.workingDir);
  }
  return record;
}

/** The exported file's text. */
export function exportedText(record: WorkloadRecord): string {
  return `${JSON.stringify(record, null, 2)}\n`;
}

/**
 * `mcpmgr export NAME PATH`: a file that is there already is replaced only when it is an earlier
 * export of the same workload, since a mistyped path must not cost the user a file (nor another
 * workload's export). A symlink stays one (its target is written).
 */
export async function writeExported(path: string, record: WorkloadRecord): Promise<void> {
  const text = exportedText(record);
  const target = await linkTarget(path);
  const existing = await stat(target).catch(() => undefined);
  if (existing?.isDirectory()) {
    throw new McpmgrError("INVALID_ARGUMENT", `${path} is a folder`, {
      hint: `name a file in it, e.g. mcpmgr export ${record.name} ${shellWord(join(path, `${record.name}.json`))}`,
    });
  }
  // Like cp and tee: a folder part that does not exist is most likely a typo, not a wish for new folders.
  const folder = await stat(dirname(target)).catch(() => undefined);
  if (!folder?.isDirectory()) {
    const what = folder === undefined ? "does not exist" : "is not a folder";
    throw new McpmgrError("INVALID_ARGUMENT", `the folder ${dirname(path)} ${what}`, {
      hint: "create it first, or choose another path",
    });
  }
  const exported = existing?.isFile() ? exportedName(target, path) : undefined;
  if (existing !== undefined && exported === undefined) {
    throw new McpmgrError(
      "INVALID_ARGUMENT",
      `${path} exists and is not an exported mcpmgr configuration; export does not overwrite it`,
      { hint: "choose another path, or move that file away first" },
    );
  }
  // Another workload's export may be the only copy of it left (exported, then removed): kept too.
  if (exported !== undefined && exported !== record.name) {
    throw new McpmgrError(
      "INVALID_ARGUMENT",
      `${path} holds the exported configuration of workload ${JSON.stringify(exported)}; export replaces only an earlier export of ${record.name}`,
      { hint: "choose another path, or move that file away first" },
    );
  }
  try {
    await writeFileAtomic(target, text);
  } catch (err) {
    throw new McpmgrError("STATE_IO", `cannot write ${path}: ${errorMessage(err)}`, {
      hint: "choose a path in a folder you can write to",
    });
  }
}

/** Where a path's chain of symlinks ends (a link to a file not written yet included); the path itself otherwise. */
async function linkTarget(path: string): Promise<string> {
  const real = await realpath(path).catch(() => undefined);
  if (real !== undefined) return real;
  let current = path;
  for (let hops = 0; hops < 40; hops++) {
    const link = await readlink(current).catch(() => undefined);
    if (link === undefined) return current;
    current = resolve(dirname(current), link);
  }
  return current;
}

/**
 * The workload name of an exported configuration; undefined for any other file. Read through the bounded
 * reader, as every file an option names is: an export is a few KiB, and a mistyped path naming a huge
 * file would otherwise be read whole (an 8 GiB one took 35 s and 8 GiB of memory) before being kept.
 */
function exportedName(target: string, path: string): string | undefined {
  let text: string;
  try {
    text = readCappedFile(target);
  } catch (err) {
    if (err instanceof FileTooLarge)
      throw new McpmgrError(
        "INVALID_ARGUMENT",
        `${path} exists and is no exported mcpmgr configuration (${err.message}); export does not overwrite it`,
        { hint: "choose another path, or move that file away first" },
      );
    return undefined;
  }
  try {
    // An export saved again by Windows Notepad starts with a byte order mark; it is still that export.
    const json = JSON.parse(text.replace(/^\uFEFF/, "")) as Record<string, unknown> | null;
    return json?.schema_version === 1 && typeof json.name === "string" && Array.isArray(json.runOptions)
      ? json.name
      : undefined;
  } catch {
    return undefined;
  }
}

/**
 * The environment an exported workload runs again in: its recorded runtime, as `start` keeps the one
 * chosen at `run`. Detection today (an engine that answers now, another shell without MCPMGR_RUNTIME)
 * would move a sandboxed process into a container, or the reverse, with other grants than it had.
 * An MCPMGR_RUNTIME that names another runtime is refused rather than overruled without a word.
 */
export function replayEnvironment(record: WorkloadRecord, env: Env, file: string): Env {
  if (record.runtime === "remote" || record.runtime === "gateway") return env;
  const chosen = env.MCPMGR_RUNTIME;
  if (chosen !== undefined && chosen !== "" && chosen !== record.runtime) {
    throw new McpmgrError(
      "CONFLICTING_OPTIONS",
      `--from-config ${file}: ${record.name} ran with the ${record.runtime} runtime, but MCPMGR_RUNTIME=${chosen}`,
      { hint: `unset MCPMGR_RUNTIME to run it as it ran, or set "runtime" in the file to ${JSON.stringify(chosen)}` },
    );
  }
  return { ...env, MCPMGR_RUNTIME: record.runtime };
}

/**
 * A runtime the file chose that this machine cannot give (no Podman here, an image with "runtime" edited
 * to process): worded as the file's choice. The runtime code names MCPMGR_RUNTIME, which replayEnvironment
 * set from the file, not the user; its hint (start the engine, unset the variable) missed the way out that
 * is the file's "runtime". `shell`: the environment the user ran the command in.
 */
export function fromConfigRuntime(err: unknown, record: WorkloadRecord, file: string, shell: Env): unknown {
  if (!(err instanceof McpmgrError) || (shell.MCPMGR_RUNTIME ?? "") !== "") return err;
  if (record.runtime === "remote" || record.runtime === "gateway") return err;
  const chosen = `MCPMGR_RUNTIME=${record.runtime}`;
  if (!err.message.includes(chosen)) return err;
  if (err.code !== "RUNTIME_UNAVAILABLE" && err.code !== "CONFLICTING_OPTIONS") return err;
  const elsewhere = ["docker", "podman", "process"].filter((other) => other !== record.runtime);
  const edit = `set "runtime" in ${file} to ${elsewhere.map((other) => JSON.stringify(other)).join(" or ")} to run it on another one`;
  const hint =
    err.code === "RUNTIME_UNAVAILABLE" && err.hint !== undefined ? `${err.hint}; or ${edit}` : edit.replace(/^s/, "S");
  return new McpmgrError(
    err.code,
    `--from-config ${file}: ${err.message.replace(chosen, `"runtime" is ${JSON.stringify(record.runtime)} there`)}`,
    { hint },
  );
}

/** The argv `run` parses for an exported workload. */
export function argsFromConfig(record: WorkloadRecord, foreground: boolean): string[] {
  return foreground ? ["--foreground", ...record.runOptions] : [...record.runOptions];
}

/**
 * An exported background gateway: its stored options are the `mcpmgr gateway ... --detach` that
 * made it, turned back into its spec (refused in the foreground, or when they are not a detached
 * gateway's).
 */
export async function exportedGatewaySpec(record: WorkloadRecord, foreground: boolean) {
  if (foreground) {
    throw new McpmgrError("CONFLICTING_OPTIONS", `--from-config holds the background gateway ${record.name}`, {
      // The group is the file's word (a file is handed around): offered only when it is a group's name.
      hint: `leave --foreground out, or run a gateway in the foreground with 'mcpmgr gateway ${isValidWorkloadName(record.group) ? record.group : "GROUP"}'`,
    });
  }
  const { buildGatewaySpec } = await import("../config/gateway-spec.ts");
  const spec = buildGatewaySpec(record.runOptions);
  if (!spec.detach) {
    throw new McpmgrError(
      "INVALID_OPTION",
      `--from-config: ${record.name}'s run options are not a background gateway's`,
      {
        hint: "export it again with 'mcpmgr export NAME PATH'",
      },
    );
  }
  return spec;
}

/** A JSON value with its object keys sorted, so that two spellings of the same value compare equal. */
function canonical(value: unknown): string {
  return JSON.stringify(value, (_key, inner: unknown) =>
    inner !== null && typeof inner === "object" && !Array.isArray(inner)
      ? Object.fromEntries(Object.entries(inner).sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0)))
      : inner,
  );
}

/**
 * An exported file's fields beside `runOptions` that say something else than the run options: only the
 * run options are run (parsed again like a command line), so a hand-edited `"env"` or `"host"` would be
 * ignored without a word. Refused, naming the field; the fields are what background.ts `recordWorkload`
 * writes from the same options (volumes resolved from the working directory, where the process now is).
 * `"proxyPort"` is left to `portDisagreement`: the documented way to run a copy edits the run options alone.
 */
export function assertFieldsAgree(record: WorkloadRecord, parsed: ParsedRunArgv, file: string): void {
  const { values } = parsed;
  const fields: [string, unknown, unknown, string][] = [
    // A file exported before `localhost` was recorded as the address it binds says "localhost".
    ["host", listenAddress(record.host), values.host, "--host"],
    ["env", record.env, Object.fromEntries(values.env.map((pair) => [pair.key, pair.value])), "-e"],
    ["secrets", record.secrets, values.secret.map((ref) => ({ name: ref.name, target: ref.target })), "--secret"],
    [
      "volumes",
      record.volumes,
      values.volume.map((v) => ({
        hostPath: resolve(v.hostPath),
        containerPath: v.containerPath,
        readOnly: v.readOnly,
      })),
      "-v",
    ],
    ["labels", record.labels, Object.fromEntries(values.label.map((pair) => [pair.key, pair.value])), "-l"],
  ];
  for (const [field, written, runs, option] of fields) {
    if (canonical(written) === canonical(runs)) continue;
    throw new McpmgrError(
      "INVALID_OPTION",
      `--from-config ${file}: its ${JSON.stringify(field)} is ${canonical(written)}, but its runOptions give ${canonical(runs)}; runOptions is what runs`,
      {
        hint: `make the change with ${option} in "runOptions" (and "${field}" with it), or export the workload again`,
      },
    );
  }
}

/**
 * A `"proxyPort"` that is not the run options' `--proxy-port`, as one line to show: the run options' port is
 * the one taken (docs/file-formats.md: a copy is run by editing its --proxy-port there), but an edited
 * "proxyPort" must not pass without a word. None when the run options name no port (taken out for a free one).
 */
export function portDisagreement(record: WorkloadRecord, parsed: ParsedRunArgv, file: string): string | undefined {
  const port = parsed.values["proxy-port"];
  if (port === undefined || port === record.proxyPort) return undefined;
  return `${file}: its "proxyPort" is ${record.proxyPort}, but the --proxy-port in its runOptions, ${port}, is the port it runs on (edit the runOptions to change it)`;
}
