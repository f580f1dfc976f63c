/**
 * --env-file and --env-file-dir: dotenv-format files parsed by the dotenv library
 * (quotes, comments, multi-line values). Names must be valid variable names; a
 * directory contributes every regular file in it, in name order.
 *
 * An env file holds secrets: a refusal says where (the file and the line) and what is wrong, never
 * what the line holds. A name dotenv takes but no environment can use may be a token pasted on a
 * line of its own (`sk-proj-…=`), so it is described by the character that is wrong, not quoted.
 */
import { readdirSync, statSync } from "node:fs";
import { FileTooLarge, readCappedFile, SAVE_AS_UTF8, utf16Problem } from "../bounded-file.ts";
import { join } from "node:path";
import { parse } from "dotenv";
import { McpmgrError } from "../errors.ts";

const envName = /^[A-Za-z_][A-Za-z0-9_]*$/;
const nameHint = "names use letters, digits and _, and do not start with a digit";

export function loadEnvFile(path: string, option = "--env-file"): Record<string, string> {
  const fail = (why: string, hint: string) =>
    new McpmgrError("INVALID_OPTION", `${option} ${JSON.stringify(path)}: ${why}`, { hint });
  let text: string;
  try {
    text = readCappedFile(path);
  } catch (err) {
    const code = err instanceof FileTooLarge ? "EFBIG" : (err as { code?: string }).code;
    throw fail(
      code === "ENOENT" ? "no such file" : code === "EFBIG" ? (err as Error).message : "cannot be read",
      "give the path of a KEY=VALUE file",
    );
  }
  const utf16 = utf16Problem(text);
  if (utf16 !== undefined) throw fail(utf16, SAVE_AS_UTF8);
  const values = parse(text);
  for (const [name, value] of Object.entries(values)) {
    if (!envName.test(name))
      throw fail(`${lineOf(text, name)}not a valid variable name (${nameProblem(name)})`, `rename it: ${nameHint}`);
    // No process's environment can carry a NUL byte: the server's start would fail on it, quoting the value.
    if (value.includes("\0"))
      throw fail(
        `${lineOf(text, name)}the value holds a NUL byte, which no environment variable can carry`,
        "take the NUL byte out of the value (base64-encode a binary value)",
      );
  }
  return values;
}

/** What is wrong with a name dotenv took (its names are letters, digits, `_`, `.` and `-`). */
function nameProblem(name: string): string {
  const bad = [...name].find((char) => !/[A-Za-z0-9_]/.test(char));
  return bad === undefined ? "it starts with a digit" : `it has ${JSON.stringify(bad)} in it`;
}

/**
 * "line N: " for the line where dotenv found `name` (the first line that starts with it, after blanks and an
 * `export`), or "" if none does. dotenv gives no positions; its keys always start a line.
 */
function lineOf(text: string, name: string): string {
  const escaped = name.replace(/[.*+?^${}()|[\]\\-]/g, "\\$&");
  const starts = new RegExp(`^\\s*(?:export\\s+)?${escaped}\\s*[=:]`);
  const index = text.split(/\r\n?|\n/).findIndex((line) => starts.test(line));
  return index === -1 ? "" : `line ${index + 1}: `;
}

export function loadEnvDir(dir: string): Record<string, string> {
  let names: string[];
  try {
    names = readdirSync(dir).sort();
  } catch {
    throw new McpmgrError("INVALID_OPTION", `--env-file-dir ${JSON.stringify(dir)}: not a readable directory`, {
      hint: "give a directory of KEY=VALUE files",
    });
  }
  const merged: Record<string, string> = {};
  for (const name of names) {
    if (name.startsWith(".")) continue;
    const path = join(dir, name);
    let isFile: boolean;
    try {
      isFile = statSync(path).isFile();
    } catch (err) {
      // A link to nothing (or an entry gone since the listing): a file the user meant to give, missing.
      const missing = (err as { code?: string }).code === "ENOENT";
      throw new McpmgrError(
        "INVALID_OPTION",
        `--env-file-dir ${JSON.stringify(dir)}: ${JSON.stringify(name)} ${missing ? "is a link to nothing" : "cannot be read"}`,
        { hint: "fix or remove that entry of the directory" },
      );
    }
    if (isFile) Object.assign(merged, loadEnvFile(path, "--env-file-dir"));
  }
  return merged;
}
