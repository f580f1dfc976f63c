/**
 * A client that writes its own file in place (truncate, then write) while mcpmgr edits it
 * (review 9 F4): mcpmgr never takes the empty or half-written file for the whole one. A real
 * writer process truncates the file, writes part of it and pauses until told to go on; mcpmgr's
 * edit must wait for it (and say so), then add its entry to the whole file. One that never
 * finishes in time is given up on with one warning, the client's text intact. A file replaced
 * between mcpmgr's read and its rename is read again.
 */
import { expect, setDefaultTimeout, test } from "bun:test";
import {
  chmodSync,
  mkdirSync,
  readdirSync,
  readFileSync,
  renameSync,
  statSync,
  utimesSync,
  writeFileSync,
} from "node:fs";
import { dirname, join, resolve } from "node:path";
import { parse as parseYaml } from "yaml";
import { clientById } from "../../src/clients/catalog.ts";
import { editClientFile } from "../../src/clients/config-file.ts";
import { readSettled } from "../../src/clients/settled-read.ts";
import type { ClientConfigSync } from "../../src/clients/sync.ts";
import { type ClientHome, clientSyncPerTest, localEndpoint } from "../support/client-home.ts";

// Real processes: more than bun's 5 s on a loaded machine.
setDefaultTimeout(60_000);

const WRITER = resolve(import.meta.dir, "../fixtures/clients-writer/in-place-writer.ts");
const cw = localEndpoint("cw", 41001);

let h: ClientHome;
let sync: ClientConfigSync;
clientSyncPerTest((fresh) => ({ h, sync } = fresh));

interface PausedWriter {
  finish(): Promise<void>;
}

/** Starts the writer on `file` with `text`, and returns once it has truncated the file and written `cut` bytes. */
async function writeInPlace(file: string, text: string, cut: number): Promise<PausedWriter> {
  const source = join(h.home, "writer-source");
  writeFileSync(source, text);
  const writer = Bun.spawn([process.execPath, WRITER, file, source, String(cut)], {
    stdin: "pipe",
    stdout: "pipe",
    stderr: "inherit",
  });
  const reader = writer.stdout.getReader();
  let said = "";
  while (!said.includes("paused\n")) {
    const chunk = await reader.read();
    if (chunk.done) throw new Error(`the writer ended early: ${said}`);
    said += new TextDecoder().decode(chunk.value);
  }
  return {
    async finish() {
      writer.stdin.write("go\n");
      await writer.stdin.flush();
      writer.stdin.end();
      expect(await writer.exited).toBe(0);
    },
  };
}

/** "waiting" once mcpmgr says it waits for the writer, "done" if the edit finished first. */
async function firstOf(edit: Promise<unknown>): Promise<"waiting" | "done"> {
  let done = false;
  void edit.finally(() => {
    done = true;
  });
  for (;;) {
    if (h.infos.some((line) => line.includes("is writing it"))) return "waiting";
    if (done) return "done";
    await Bun.sleep(10);
  }
}

test("an empty ~/.claude.json caught mid-write is waited for: every key of the client's stays, and the entry is added", async () => {
  const path = clientById("claude-code").configPath(h.ctx);
  await sync.registerClient("claude-code", "default", []);
  const full = `${JSON.stringify({ numStartups: 13, oauthAccount: { id: "me" }, projects: { "/p": {} }, mcpServers: {} }, null, 2)}\n`;
  writeFileSync(path, full);
  const writer = await writeInPlace(path, full, 0);
  expect(readFileSync(path, "utf8")).toBe("");

  const edit = sync.onWorkloadStarted(cw);
  expect(await firstOf(edit)).toBe("waiting");
  await writer.finish();
  expect((await edit)[0]?.action).toBe("added");
  const after = JSON.parse(readFileSync(path, "utf8"));
  expect(Object.keys(after)).toEqual(["numStartups", "oauthAccount", "projects", "mcpServers"]);
  expect(after.mcpServers).toEqual({ cw: { type: "http", url: cw.url } });
  expect(h.warnings).toEqual([]);
});

test("a Goose config.yaml cut at a line boundary (it still parses) is waited for: its second half is not lost", async () => {
  const path = clientById("goose").configPath(h.ctx);
  mkdirSync(dirname(path), { recursive: true });
  await sync.registerClient("goose", "default", []);
  const extensions = Array.from(
    { length: 40 },
    (_, i) => `  ext${i}:\n    enabled: true\n    name: ext${i}\n    type: builtin\n`,
  ).join("");
  const full = `extensions:\n${extensions}GOOSE_MODEL: claude-sonnet-4-5\nGOOSE_PROVIDER: anthropic\n`;
  writeFileSync(path, full);
  const writer = await writeInPlace(path, full, full.indexOf("  ext30:"));
  // What mcpmgr would see now is valid YAML on its own.
  expect(Object.keys(parseYaml(readFileSync(path, "utf8")).extensions)).toHaveLength(30);

  const edit = sync.onWorkloadStarted(cw);
  expect(await firstOf(edit)).toBe("waiting");
  await writer.finish();
  expect((await edit)[0]?.action).toBe("added");
  const after = readFileSync(path, "utf8");
  expect(after.startsWith(full.slice(0, full.indexOf("GOOSE_MODEL")))).toBe(true);
  const parsed = parseYaml(after);
  expect(Object.keys(parsed.extensions)).toHaveLength(41);
  expect(parsed.extensions.cw.uri).toBe(cw.url);
  expect(parsed.GOOSE_PROVIDER).toBe("anthropic");
});

test("a writer that does not finish in time: the edit gives up with one warning, and the client's file is whole", async () => {
  const path = clientById("cursor").configPath(h.ctx);
  mkdirSync(dirname(path), { recursive: true });
  await sync.registerClient("cursor", "default", []);
  const full = `{\n  "mcpServers": {\n    "mine": { "url": "http://example.com/mcp" }\n  }\n}\n`;
  writeFileSync(path, full);
  const writer = await writeInPlace(path, full, 10);

  const started = Date.now();
  const reports = await sync.onWorkloadStarted(cw);
  expect(Date.now() - started).toBeGreaterThanOrEqual(4_900);
  expect(reports[0]?.action).toBe("skipped");
  expect(h.warnings).toHaveLength(1);
  expect(h.warnings[0]).toMatch(
    /Cursor \(.*mcp\.json\): \S+ \(pid \d+\) is writing it for more than 5 s; mcpmgr left it unchanged/,
  );
  await writer.finish();
  expect(readFileSync(path, "utf8")).toBe(full);
  // No record of an entry that is not there.
  expect((await sync.status()).find((status) => status.id === "cursor")?.entries).toEqual([]);
});

test("a file another program replaced between mcpmgr's read and its rename is read again, and its change kept", async () => {
  const path = clientById("cursor").configPath(h.ctx);
  mkdirSync(dirname(path), { recursive: true });
  writeFileSync(path, `{\n  "mcpServers": {}\n}\n`);
  const theirs = `{\n  "theme": "dark",\n  "mcpServers": {}\n}\n`;
  let reads = 0;
  const result = await editClientFile(h.ctx, clientById("cursor"), path, { create: true }, (text, editor) => {
    // The client saves its own change (atomically, as mcpmgr does) after mcpmgr's first read.
    if (reads++ === 0) {
      writeFileSync(`${path}.theirs`, theirs);
      renameSync(`${path}.theirs`, path);
    }
    return editor.insertEntry(text, { kind: "map", path: ["mcpServers"] }, "cw", { url: cw.url });
  });
  expect(result).toEqual({ changed: true });
  expect(reads).toBe(2);
  expect(JSON.parse(readFileSync(path, "utf8"))).toEqual({ theme: "dark", mcpServers: { cw: { url: cw.url } } });
});

test("a read-only client file (mode 0444) is left alone with one warning naming the way out", async () => {
  const path = clientById("cursor").configPath(h.ctx);
  mkdirSync(dirname(path), { recursive: true });
  const mine = `{\n  "mcpServers": {}\n}\n`;
  writeFileSync(path, mine);
  chmodSync(path, 0o444);
  const reports = await sync.registerClient("cursor", "default", [cw]);
  expect(reports[0]?.action).toBe("skipped");
  expect(h.warnings).toEqual([
    expect.stringMatching(/it is read-only \(mode 0444\); mcpmgr left it unchanged \(make it writable, chmod u\+w/),
  ]);
  expect(readFileSync(path, "utf8")).toBe(mine);
  expect(statSync(path).mode & 0o777).toBe(0o444);
});

test("without /proc (macOS, Windows), a file changed a moment ago is read once it has been left alone for a second", async () => {
  const path = join(h.home, "settings.json");
  writeFileSync(path, "{}\n");
  const written = statSync(path).mtimeMs;
  const waits: string[] = [];
  const read = await readSettled(path, {
    deadline: Date.now() + 5_000,
    onWait: (why) => waits.push(why),
    findWriter: async () => undefined,
  });
  expect(read?.text).toBe("{}\n");
  expect(Date.now() - written).toBeGreaterThanOrEqual(1_000);
  expect(waits).toEqual(["another program is writing it"]);

  // Left alone long enough already: read at once.
  const anHourAgo = new Date(Date.now() - 3_600_000);
  utimesSync(path, anHourAgo, anHourAgo);
  const started = Date.now();
  await readSettled(path, { deadline: Date.now() + 5_000, findWriter: async () => undefined });
  expect(Date.now() - started).toBeLessThan(500);
});

test("a writer that finishes between mcpmgr's read and its look for writers: the first part read is not taken for the file (walk 3)", async () => {
  const path = clientById("cursor").configPath(h.ctx);
  mkdirSync(dirname(path), { recursive: true });
  const full = `{\n  "mcpServers": {\n    "mine": { "url": "http://example.com/mcp" }\n  },\n  "n": 362\n}\n`;
  writeFileSync(path, full);
  const writer = await writeInPlace(path, full, 20);
  let looks = 0;
  const read = await readSettled(path, {
    deadline: Date.now() + 5_000,
    // The read has happened (the first 20 bytes); now the client writes the rest and closes the
    // file, before mcpmgr looks for it in /proc: there is no writer to find any more.
    findWriter: async () => {
      if (looks++ === 0) await writer.finish();
      return null;
    },
  });
  expect(read?.text).toBe(full);
});

test("temporary files a killed mcpmgr left beside the client's file (each a whole copy of it) go at the next edit", async () => {
  const path = h.seed("cursor");
  const folder = dirname(path);
  // A writer killed between its temporary file and the rename, as SIGKILL or a power cut leaves it.
  const killed = Bun.spawnSync([
    process.execPath,
    "-e",
    `require("node:fs").writeFileSync(${JSON.stringify(folder)} + "/.mcp.json." + process.pid + ".0123456789ab.tmp", "copy"); process.kill(process.pid, "SIGKILL");`,
  ]);
  expect(killed.signalCode).toBe("SIGKILL");
  const left = `.mcp.json.${killed.pid}.0123456789ab.tmp`;
  // A live writer's (this process stands for one), and names that are not mcpmgr's temporary files, stay.
  const kept = [
    `.mcp.json.${process.ppid}.ba9876543210.tmp`,
    ".mcp.json.old.tmp",
    `.other.json.${killed.pid}.0123456789ab.tmp`,
  ];
  for (const name of [left, ...kept]) writeFileSync(join(folder, name), "copy");
  await sync.registerClient("cursor", "default", [cw]);
  expect(readFileSync(path, "utf8")).toContain(cw.url);
  expect(readdirSync(folder).sort()).toEqual(["mcp.json", ...kept].sort());
});

test("a folder where the client's file belongs is warned about once, and shown by client status every time", async () => {
  const path = clientById("cursor").configPath(h.ctx);
  mkdirSync(path, { recursive: true });
  await sync.registerClient("cursor", "default", []);
  for (const port of [41001, 41002]) await sync.onWorkloadStarted(localEndpoint("cw", port));
  expect(h.warnings).toEqual([`Cursor (${path}): it is a directory, not a regular file; mcpmgr left it unchanged`]);
  const status = (await sync.status()).find((client) => client.id === "cursor");
  expect(status?.problem).toBe("it is a directory, not a regular file; mcpmgr left it unchanged");
});
