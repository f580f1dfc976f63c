/**
 * ARCHITECTURE.md is the source of truth for the code's structure: every module under src/ is
 * named in it (by file name, or by a folder pattern such as `flags/*.ts`), a module of a folder in
 * that folder's paragraph or table (not only somewhere else, under a name another folder's module
 * shares), and every module it names exists, so adding, moving or deleting a file without updating
 * the text fails here.
 */
import { expect, test } from "bun:test";
import { resolve } from "node:path";

const ROOT = resolve(import.meta.dir, "../..");

async function architecture(): Promise<string> {
  return Bun.file(resolve(ROOT, "ARCHITECTURE.md")).text();
}

test("every module under src/ is named in ARCHITECTURE.md", async () => {
  const text = await architecture();
  const patterns = [...text.matchAll(/`([\w/-]+)\/\*\.ts`/g)].map((match) => `${match[1]}/`);
  const missing: string[] = [];
  for await (const path of new Bun.Glob("**/*.ts").scan({ cwd: resolve(ROOT, "src") })) {
    const name = path.split("/").pop() as string;
    if (text.includes(name)) continue;
    if (
      patterns.some(
        (folder) => path.includes(folder) && !path.slice(path.indexOf(folder) + folder.length).includes("/"),
      )
    )
      continue;
    missing.push(`src/${path}`);
  }
  expect(missing).toEqual([]);
});

test('every module in a folder of src/ is named in that folder\'s part of "Folders and modules"', async () => {
  const text = await architecture();
  const part = text.slice(text.indexOf("### Folders and modules"), text.indexOf("## 3. Conventions"));
  // The part is a run of "**`folder/`**" paragraphs and tables: the text after each marker, up to the next.
  const pieces = part.split(/\*\*`([a-z-]+)\/`\*\*/);
  const sections = new Map<string, string>();
  for (let i = 1; i < pieces.length; i += 2) sections.set(pieces[i] as string, pieces[i + 1] as string);
  const patterns = [...text.matchAll(/`([\w/-]+)\/\*\.ts`/g)].map((match) => `/${match[1]}/`);
  const misplaced: string[] = [];
  for await (const path of new Bun.Glob("*/**/*.ts").scan({ cwd: resolve(ROOT, "src") })) {
    const name = path.split("/").pop() as string;
    const section = sections.get(path.split("/")[0] as string) ?? "";
    const folder = `/${path.slice(0, path.lastIndexOf("/"))}/`;
    if (section.includes(name) || patterns.some((pattern) => folder.endsWith(pattern))) continue;
    misplaced.push(`src/${path}`);
  }
  expect(misplaced).toEqual([]);
});

test("every module ARCHITECTURE.md names exists", async () => {
  const text = await architecture();
  const present = new Set<string>();
  for await (const path of new Bun.Glob("**/*.{ts,cjs}").scan({ cwd: ROOT })) {
    if (!path.startsWith("node_modules/")) present.add(path.split("/").pop() as string);
  }
  const named = new Set(text.match(/[\w.-]+\.(?:ts|cjs)\b/g) ?? []);
  expect([...named].filter((name) => !present.has(name))).toEqual([]);
});
