/**
 * The memory an edit of a big client file costs (review 9 F7). ~/.claude.json grows with Claude
 * Code's per-project history; every run, stop and start edits it. Building jsonc-parser's whole
 * tree took ~22 times the file's size; the edit now builds nodes only for the way to
 * `mcpServers`, and must stay within a few copies of the text.
 */
import { afterAll, expect, setDefaultTimeout, test } from "bun:test";
import { mkdtempSync, readFileSync, rmSync, utimesSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join, resolve } from "node:path";

setDefaultTimeout(60_000);

const EDIT = resolve(import.meta.dir, "../fixtures/clients-writer/register-once.ts");
const home = mkdtempSync(join(tmpdir(), "mcpmgr-big-client-file-"));
afterAll(() => rmSync(home, { recursive: true, force: true }));

test("adding an entry to a 30 MB ~/.claude.json costs less than 10 times the file in memory, and nothing else changes", async () => {
  const history = Array.from({ length: 200 }, (_, i) => `      "some history line ${i}"`).join(",\n");
  const projects = Array.from(
    { length: 5_000 },
    (_, p) => `    "/p${p}": {\n      "history": [\n${history}\n      ]\n    }`,
  );
  const text = `{\n  "numStartups": 3,\n  "projects": {\n${projects.join(",\n")}\n  },\n  "mcpServers": {}\n}\n`;
  const path = join(home, ".claude.json");
  writeFileSync(path, text);
  // Written an hour ago: no client is writing it now.
  const anHourAgo = new Date(Date.now() - 3_600_000);
  utimesSync(path, anHourAgo, anHourAgo);
  const size = Buffer.byteLength(text);
  expect(size).toBeGreaterThan(30_000_000);

  const edit = Bun.spawn([process.execPath, EDIT, home, "claude-code"], { stdout: "pipe", stderr: "pipe" });
  const [out, err, code] = await Promise.all([
    new Response(edit.stdout).text(),
    new Response(edit.stderr).text(),
    edit.exited,
  ]);
  expect(err).toBe("");
  expect(code).toBe(0);
  const { action, before, after } = JSON.parse(out) as { action: string; before: number; after: number };
  expect(action).toBe("added");
  console.log(`edit: ${(((after - before) * 1024) / size).toFixed(1)} times the file`);
  expect((after - before) * 1024).toBeLessThan(10 * size);
  expect(readFileSync(path, "utf8")).toBe(
    text.replace(
      `"mcpServers": {}`,
      `"mcpServers": {\n    "cw": {\n      "type": "http",\n      "url": "http://127.0.0.1:41001/mcp"\n    }\n  }`,
    ),
  );
});
