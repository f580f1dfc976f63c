/**
 * --env-file and --env-file-dir: dotenv-format files parsed by the dotenv library
 * (quotes, comments, multi-line values). Names must be valid variable names; a
 * directory contributes every regular file in it, in name order.
 */
import { readdirSync, statSync } from "node:fs";
import { FileTooLarge, readCappedFile } from "../bounded-file.ts";
import { join } from "node:path";
import { parse } from "dotenv";
import { McpmgrError } from "../errors.ts";

const envName = /^[A-Za-z_][A-Za-z0-9_]*$/;

export function loadEnvFile(path: string, option = "--env-file"): Record<string, string> {
  let text: string;
  try {
    text = readCappedFile(path);
  } catch (err) {
    const code = err instanceof FileTooLarge ? "EFBIG" : (err as { code?: string }).code;
    throw new McpmgrError(
      "INVALID_OPTION",
      `${option} ${JSON.stringify(path)}: ${code === "ENOENT" ? "no such file" : code === "EFBIG" ? (err as Error).message : "cannot be read"}`,
      {
        hint: "give the path of a KEY=VALUE file",
      },
    );
  }
  const values = parse(text);
  for (const name of Object.keys(values)) {
    if (!envName.test(name)) {
      throw new McpmgrError(
        "INVALID_OPTION",
        `${option} ${path}: ${JSON.stringify(name)} is not a valid variable name`,
        { hint: "names use letters, digits and _" },
      );
    }
  }
  return values;
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
    const path = join(dir, name);
    if (!statSync(path).isFile() || name.startsWith(".")) continue;
    Object.assign(merged, loadEnvFile(path, "--env-file-dir"));
  }
  return merged;
}
