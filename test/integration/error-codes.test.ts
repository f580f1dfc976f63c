/**
 * Every error code, produced by the code that raises it (ARCHITECTURE.md §3.4: tests assert on codes).
 * The table is a Record over ErrorCode, so a new code does not typecheck until it has a case
 * here. Some cases need what the code needs: a container engine, a pseudo-terminal.
 */
import { afterAll, beforeAll, expect, setDefaultTimeout, test } from "bun:test";
import { closeSync, openSync } from "node:fs";
import { chmod, mkdir, readdir, mkdtemp, rm, symlink, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import * as v from "valibot";
import { createTokenVerifier } from "../../src/auth/incoming/verifier.ts";
import { discoverFromRemote } from "../../src/auth/outgoing/discovery.ts";
import { ClientConfigSync } from "../../src/clients/sync.ts";
import { assertAnswersDirectCallers, gatewayKey, guardGroup } from "../../src/state/gateway-guard.ts";
import { incomingAuthSpec } from "../../src/config/incoming-auth-spec.ts";
import { parseRunArgv } from "../../src/config/run-argv.ts";
import { readLocalIgnoreFile } from "../../src/runtime/ignore-overlays.ts";
import { writeWhole } from "../../src/cli/output.ts";
import proxyCommand from "../../src/cli/proxy.ts";
import { type ErrorCode, McpmgrError } from "../../src/errors.ts";
import { PolicySetClient } from "../../src/middleware/cedar-client.ts";
import { refuseRedirects } from "../../src/proxy/remote-client/no-redirects.ts";
import { serve } from "../../src/proxy/serve.ts";
import { loadRegistry } from "../../src/registry/loader.ts";
import { registryEntrySchema } from "../../src/registry/schema.ts";
import { buildFromContext } from "../../src/runtime/docker/build-context.ts";
import { startServerContainer } from "../../src/runtime/docker/container.ts";
import { detectEngine, type ContainerEngine } from "../../src/runtime/docker/engine.ts";
import { applyVerification, ensureImage } from "../../src/runtime/docker/images.ts";
import { packageCommand } from "../../src/runtime/package-command.ts";
import { parseSource } from "../../src/runtime/source.ts";
import { createSecretManager } from "../../src/secrets/manager.ts";
import { fixedPasswordSource } from "../../src/secrets/password.ts";
import { readJsonFile, writeFileAtomic } from "../../src/state/atomic-file.ts";
import { GroupStore } from "../../src/state/groups.ts";
import { acquireLock } from "../../src/state/lock.ts";
import { resolvePaths } from "../../src/state/paths.ts";
import { assertPrivateDirectories } from "../../src/state/private-dirs.ts";
import { WorkloadStore } from "../../src/state/workloads.ts";
import { assertBatchDone } from "../../src/workload/batch.ts";
import { liveWorkload, liveWorkloadFetch } from "../../src/workload/live-workload.ts";
import { locateServer } from "../../src/workload/locate.ts";
import { deleteSecret } from "../../src/workload/secret-references.ts";
import { processPlacement } from "../../src/workload/process-placement.ts";
import { startWorkload } from "../../src/workload/start.ts";
import { NODE_BASE_IMAGE } from "../support/docker-images.ts";
import { CLI_ENTRY, REPO_ROOT, freePort, idleProcess } from "../support/processes.ts";
import { specFor, testContext } from "../support/workload-context.ts";

// Real processes and servers: more than bun's 5 s on a loaded machine (the preload's default
// reaches only the first file of a run).
setDefaultTimeout(60_000);

const FAST_KDF = { N: 1024, r: 8, p: 1 };
let dir: string;
let engine: ContainerEngine;

beforeAll(async () => {
  dir = await mkdtemp(join(tmpdir(), "mcpmgr-error-codes-"));
  const found = await detectEngine({ want: "docker" });
  if (found === undefined) throw new Error("dockerd must be running for the container engine's error codes");
  engine = found;
});
afterAll(async () => {
  await rm(dir, { recursive: true, force: true });
});

/** What `produce` throws (or rejects with), which must be an McpmgrError. */
async function raised(produce: () => unknown): Promise<McpmgrError> {
  try {
    await produce();
  } catch (err) {
    if (err instanceof McpmgrError) return err;
    throw err;
  }
  throw new Error("nothing was thrown");
}

const store = () => new WorkloadStore(resolvePaths({ MCPMGR_HOME: join(dir, "home") }));
const groups = () => new GroupStore(resolvePaths({ MCPMGR_HOME: join(dir, "home") }), { workloads: store() });
/** The AI clients' configuration, in a home of the test's own. */
const clientSync = () =>
  new ClientConfigSync({
    home: join(dir, "client-home"),
    platform: "linux",
    env: {},
    paths: resolvePaths({ MCPMGR_HOME: join(dir, "home") }),
    log: { warn: () => {}, info: () => {} },
    selfCommand: ["mcpmgr"],
  });
const secrets = (sub: string, password?: string) =>
  createSecretManager({
    dir: join(dir, sub),
    env: {},
    keychain: null,
    kdf: FAST_KDF,
    ...(password ? { passwordSource: fixedPasswordSource(password) } : {}),
  });

const producers: Record<ErrorCode, () => unknown> = {
  INVALID_OPTION: () => parseRunArgv(["npx://pkg", "--proxy-port", "nope"]),
  MISSING_OPTION: () => parseRunArgv([]),
  CONFLICTING_OPTIONS: () =>
    parseRunArgv(["https://x.example/mcp", "--remote-auth-bearer-token", "t", "--remote-auth-bearer-token-file", "f"]),
  NOT_SUPPORTED_YET: () => (proxyCommand.run as (context: { rawArgs: string[] }) => unknown)({ rawArgs: ["tunnel"] }),
  INVALID_ARGUMENT: () => parseSource("foo://bar"),
  PORT_IN_USE: async () => {
    const busy = Bun.serve({ hostname: "127.0.0.1", port: 0, fetch: () => new Response() });
    try {
      serve({ host: "127.0.0.1", port: busy.port, handler: () => new Response() });
    } finally {
      busy.stop(true);
    }
  },
  // TEST-NET-1 is nobody's address: nothing can listen there.
  LISTEN_FAILED: () => serve({ host: "192.0.2.1", port: 0, handler: () => new Response() }),
  UPSTREAM_UNREACHABLE: async () => discoverFromRemote(new URL(`http://127.0.0.1:${await freePort()}/mcp`)),
  REMOTE_REDIRECT: async () => {
    const redirecting = Bun.serve({
      hostname: "127.0.0.1",
      port: 0,
      fetch: () => Response.redirect("/elsewhere", 307),
    });
    try {
      await refuseRedirects((url, init) => fetch(url, init))(`${redirecting.url.origin}/mcp`, { method: "POST" });
    } finally {
      redirecting.stop(true);
    }
  },
  STATE_CORRUPT: async () => {
    await writeFile(join(dir, "corrupt.json"), "{ half a record");
    return readJsonFile(join(dir, "corrupt.json"), v.object({ name: v.string() }));
  },
  STATE_LOCKED: async () => {
    const held = await acquireLock(join(dir, "held.lock"));
    try {
      await acquireLock(join(dir, "held.lock"), { timeoutMs: 100 });
    } finally {
      await held.release();
    }
  },
  STATE_IO: async () => {
    await writeFile(join(dir, "a-file"), "");
    return writeFileAtomic(join(dir, "a-file", "below-a-file.json"), "{}");
  },
  // Review 7: a home another user made (here, one every user may write) is refused before anything reads it.
  STATE_UNSAFE: async () => {
    const shared = join(dir, "shared-home");
    await mkdir(shared, { mode: 0o777 });
    await chmod(shared, 0o777);
    return assertPrivateDirectories(resolvePaths({ MCPMGR_HOME: shared }));
  },
  WORKLOAD_EXISTS: async () => {
    const record = {
      name: "twice",
      source: { kind: "remote", ref: "https://x.example/mcp" },
      transport: "streamable-http",
      proxyPort: 9,
      runtime: "remote",
    } as const;
    await store().create(record);
    return store().create(record);
  },
  WORKLOAD_NOT_FOUND: () => store().getExisting("nobody"),
  WORKLOADS_FAILED: () => assertBatchDone("stop", ["beta"], 0, 3),
  WORKLOAD_NOT_RUNNING: async () => {
    await store().create({
      name: "never-started",
      source: { kind: "remote", ref: "https://x.example/mcp" },
      transport: "streamable-http",
      proxyPort: 11, // 9 and 10 are other cases'
      runtime: "remote",
    });
    return liveWorkload(store(), "never-started");
  },
  WORKLOAD_ENDED_DURING_REQUEST: async () => {
    // A supervisor lookalike (`__supervise NAME`, this user's) that dies while its request is answered.
    const supervisor = await idleProcess(["__supervise", "ends-mid-request"]);
    await store().create({
      name: "ends-mid-request",
      source: { kind: "remote", ref: "https://x.example/mcp" },
      transport: "streamable-http",
      proxyPort: 13, // 9 to 12 are other cases'
      runtime: "remote",
    });
    await store().writeStatus("ends-mid-request", { state: "running", pid: supervisor.pid });
    const send = liveWorkloadFetch(await liveWorkload(store(), "ends-mid-request"), async () => {
      supervisor.kill("SIGKILL");
      await supervisor.exited;
      return new Response("{}", { headers: { "content-type": "application/json" } });
    });
    return send("http://127.0.0.1:13/mcp", { method: "POST" });
  },
  WORKLOAD_GUARDED: async () => {
    // A member of a group this (live) process marks as guarded, as a gateway with policies does.
    const paths = resolvePaths({ MCPMGR_HOME: join(dir, "guarded-home") });
    const member = await new WorkloadStore(paths).create({
      name: "member",
      source: { kind: "remote", ref: "https://x.example/mcp" },
      transport: "streamable-http",
      proxyPort: 12, // 9, 10 and 11 are other cases'
      runtime: "remote",
    });
    const unguard = await guardGroup(paths, "default", { authenticates: false });
    try {
      assertAnswersDirectCallers(paths, member, { guarding: ["gateway-default"], others: [] });
    } finally {
      await unguard();
    }
  },
  GROUP_EXISTS: async () => {
    await groups().create("made-twice");
    return groups().create("made-twice");
  },
  GROUP_NOT_FOUND: () =>
    locateServer(parseRunArgv(["https://x.example/mcp", "--group", "no-such-group"]), testContext().ctx),
  GROUP_NOT_EMPTY: async () => {
    await groups().create("busy");
    await store().create({
      name: "in-busy",
      group: "busy",
      source: { kind: "remote", ref: "https://x.example/mcp" },
      transport: "streamable-http",
      proxyPort: 10, // another workload's: 9 is WORKLOAD_EXISTS's
      runtime: "remote",
    });
    return groups().removable("busy", { withWorkloads: false });
  },
  GATEWAY_NOT_RUNNING: () => clientSync().registerClient("cursor", "default", [], { gateway: true }),
  GATEWAY_AMBIGUOUS: () =>
    clientSync().registerClient(
      "cursor",
      "default",
      ["gateway-default", "gw2"].map((name, i) => ({
        name,
        group: "default",
        url: `http://127.0.0.1:${41030 + i}/mcp`,
        transport: "streamable-http" as const,
        gateway: true,
      })),
      { gateway: true },
    ),
  GATEWAY_KEY_CORRUPT: async () => {
    const paths = resolvePaths({ MCPMGR_HOME: join(dir, "corrupt-key-home") });
    await mkdir(paths.stateDir, { recursive: true });
    await writeFile(join(paths.stateDir, "gateway.key"), "not a key");
    return gatewayKey(paths);
  },
  SECRET_NOT_FOUND: () =>
    createSecretManager({ dir, env: { MCPMGR_SECRETS_PROVIDER: "environment" } }).resolveSecret("absent"),
  SECRET_IN_USE: async () => {
    const paths = resolvePaths({ MCPMGR_HOME: join(dir, "secret-in-use-home") });
    await new WorkloadStore(paths).create({
      name: "uses-key",
      source: { kind: "remote", ref: "https://x.example/mcp" },
      transport: "streamable-http",
      proxyPort: 11,
      runtime: "remote",
      secrets: [{ name: "key", target: "KEY" }],
    });
    const provider = secrets("in-use", "pw").provider;
    await provider.set("key", "value");
    return deleteSecret(provider, paths, "key", false);
  },
  SECRETS_PASSWORD_MISSING: () => secrets("no-password").provider.set("name", "value"),
  SECRETS_PASSWORD_WRONG: async () => {
    await secrets("wrong", "right").provider.set("name", "value");
    return secrets("wrong", "wrong").provider.get("name");
  },
  SECRETS_FILE_CORRUPT: async () => {
    await secrets("corrupt", "pw").provider.set("name", "value");
    for (const name of await readdir(join(dir, "corrupt"))) await writeFile(join(dir, "corrupt", name), "{}");
    return secrets("corrupt", "pw").provider.get("name");
  },
  SECRETS_READ_ONLY: () =>
    createSecretManager({ dir, env: { MCPMGR_SECRETS_PROVIDER: "environment" } }).provider.set("a", "b"),
  // /proc takes no new files, not even from root.
  SECRETS_STORE_FAILED: () =>
    createSecretManager({
      dir: "/proc/mcpmgr",
      env: {},
      passwordSource: fixedPasswordSource("pw"),
      kdf: FAST_KDF,
    }).provider.set("a", "b"),
  CANCELLED: async () => {
    // Ctrl-C at the hidden prompt of `secret set`, in a pseudo-terminal.
    const proc = Bun.spawn(["script", "-qec", `${process.execPath} ${CLI_ENTRY} secret set typed`, "/dev/null"], {
      cwd: REPO_ROOT,
      env: { ...process.env, NO_COLOR: "1", MCPMGR_HOME: join(dir, "home") },
      stdin: "pipe",
      stdout: "pipe",
    });
    const decoder = new TextDecoder();
    let output = "";
    const reading = (async () => {
      for await (const chunk of proc.stdout) output += decoder.decode(chunk, { stream: true });
    })();
    const deadline = Date.now() + 15_000;
    while (!output.includes("input hidden") && Date.now() < deadline) await Bun.sleep(20);
    proc.stdin.write("\u0003");
    await proc.stdin.flush();
    const exitCode = await Promise.race([proc.exited, Bun.sleep(15_000).then(() => -1)]);
    if (exitCode === -1) proc.kill("SIGKILL");
    await reading;
    // The CLI prints the message, not the code: exit 130 and "cancelled" are CANCELLED's.
    if (exitCode === 130 && output.includes("cancelled")) throw new McpmgrError("CANCELLED", "cancelled");
    throw new Error(`secret set exited with ${exitCode}: ${output}`);
  },
  REGISTRY_FILE_NOT_FOUND: () => loadRegistry({ env: { MCPMGR_REGISTRY: join(dir, "no-registry.json") } }),
  REGISTRY_UNREACHABLE: async () =>
    loadRegistry({ env: { MCPMGR_REGISTRY: `http://127.0.0.1:${await freePort()}/registry.json` }, fetch }),
  REGISTRY_INVALID: async () => {
    await writeFile(join(dir, "registry.json"), "not json");
    return loadRegistry({ env: { MCPMGR_REGISTRY: join(dir, "registry.json") } });
  },
  REGISTRY_ENTRY_NOT_FOUND: async () => (await loadRegistry({ env: {} })).get("no-such-server"),
  // A registry entry (third-party input) asking to read a system directory.
  REGISTRY_PERMISSION_REFUSED: () =>
    specFor(["--foreground", "reads-etc"], {
      entry: v.parse(registryEntrySchema, {
        name: "reads-etc",
        description: "asks for /etc",
        transport: "stdio",
        source: { npx: "@modelcontextprotocol/server-everything" },
        permissions: { read: ["/etc"] },
        tools: [],
      }),
    }),
  SANDBOX_UNAVAILABLE: async () => {
    const profile = join(dir, "allow-list.json");
    await writeFile(profile, JSON.stringify({ network: { outbound: { allow_host: ["a.example"] } } }));
    return specFor(["--foreground", "npx://./test/fixtures/sandbox-probe", "--permission-profile", profile]);
  },
  // A mount's ignore file replaced by a symbolic link to a host file (review H2).
  UNSAFE_MOUNT: async () => {
    await mkdir(join(dir, "volume"), { recursive: true });
    await symlink("/etc/hostname", join(dir, "volume/.mcpmgrignore"));
    return readLocalIgnoreFile(join(dir, "volume"));
  },
  TOOLCHAIN_MISSING: () =>
    packageCommand({ kind: "package", manager: "uvx", name: "mcp-server-fetch" }, [], () => null),
  SERVER_FAILED: async () => {
    const { ctx } = testContext();
    return startWorkload(specFor(["--foreground", "npx://./test/fixtures/exits-early"]), ctx);
  },
  RUNTIME_UNAVAILABLE: () =>
    locateServer(
      parseRunArgv(["ghcr.io/example/probe:1"]),
      testContext({ MCPMGR_RUNTIME: "podman", XDG_RUNTIME_DIR: dir, HOME: dir }).ctx,
    ),
  IMAGE_PULL_FAILED: () => ensureImage(engine, "127.0.0.1:9/mcpmgr/absent:1", () => {}),
  IMAGE_BUILD_FAILED: () =>
    buildFromContext(engine, {
      tag: `mcpmgr-test/fails-to-build:${process.pid}`,
      files: [{ path: "Dockerfile", content: `FROM ${NODE_BASE_IMAGE}\nRUN false\n`, mode: 0o644 }],
      labels: { "mcpmgr-test": "true" },
      what: "an image whose build fails",
      onLine: () => {},
    }),
  IMAGE_UNVERIFIED: () => applyVerification("enabled", "ghcr.io/example/probe:1", undefined, () => {}),
  CONTAINER_FAILED: () =>
    startServerContainer(
      engine,
      { name: `mcpmgr-error-codes-${process.pid}`, Image: "mcpmgr-test/no-such-image:0" },
      true,
    ),
  // An evaluator that exits as soon as it is started.
  CEDAR_EVALUATOR_UNAVAILABLE: async () => {
    const socketPath = join(dir, "cedar", "evaluator.sock");
    const failure = () => "it exited at once (exit code 1)";
    const access = { socketPath, logPath: join(dir, "cedar-evaluator.log"), start: () => ({ failure }) };
    return new PolicySetClient({ policies: "permit(principal, action, resource);", entities: [] }, access).open();
  },
  AUTH_SETUP_FAILED: async () => {
    const issuer = `http://127.0.0.1:${await freePort()}`;
    const spec = incomingAuthSpec(
      { "oidc-issuer": issuer, "oidc-insecure-allow-http": true, "jwks-allow-private-ip": true },
      new Set(["oidc-issuer", "oidc-insecure-allow-http", "jwks-allow-private-ip"]),
    );
    return createTokenVerifier(spec as NonNullable<typeof spec>);
  },
  // A command's output on a full device (`mcpmgr registry list > /dev/full`).
  OUTPUT_FAILED: () => {
    const fd = openSync("/dev/full", "w");
    try {
      return writeWhole(fd, "a result line\n");
    } finally {
      closeSync(fd);
    }
  },
  // An image reaching the process launcher is a bug upstream of it, reported as such.
  INTERNAL: () =>
    processPlacement(parseRunArgv(["img:1"]), { kind: "image", ref: "img:1" }, undefined, testContext().ctx),
};

for (const [code, produce] of Object.entries(producers) as [ErrorCode, () => unknown][]) {
  test(`${code} is raised, with a message and a hint`, async () => {
    const err = await raised(produce);
    expect(err.code).toBe(code);
    expect(err.message.length).toBeGreaterThan(0);
    if (code !== "CANCELLED" && code !== "INTERNAL") expect(err.hint).toBeString();
  }, 60_000);
}
