/**
 * The files options name (--audit-config, --authz-config, --webhook-config, --tools-override,
 * --permission-profile): read, parsed as JSON (or YAML where the format allows it, by the
 * file's extension), and validated by a valibot schema. Every failure is one INVALID_OPTION
 * line naming the option, the file and, for a bad value, the field: `--opt FILE: a.b: message`.
 * Also the files that hold one value (a secret, a token: the `-file` forms), read whole and trimmed.
 */
import { closeMatches, didYouMean } from "../close-matches.ts";
import { FileTooLarge, readCappedFile, SAVE_AS_UTF8, utf16Problem } from "../bounded-file.ts";
import * as v from "valibot";
import { McpmgrError } from "../errors.ts";
import { issueWithoutValue } from "./values.ts";
import { duplicateKeyText, jsonDuplicateKey, jsonProblem, yamlDuplicateKey, yamlProblem } from "./file-syntax.ts";

export interface ConfigFileOptions {
  /** The option that named the file, with its dashes: "--audit-config". */
  readonly option: string;
  /** Whether .yaml/.yml files are parsed as YAML (otherwise every file is JSON). */
  readonly yaml: boolean;
  /** What a valid file looks like, for the hint of a validation error. */
  readonly hint: string;
}

const yamlFile = /\.ya?ml$/i;

/** The file's parsed content, unvalidated. */
function readConfigFile(path: string, options: Omit<ConfigFileOptions, "hint">): unknown {
  const fail = (why: string, hint: string) =>
    new McpmgrError("INVALID_OPTION", `${options.option} ${JSON.stringify(path)}: ${why}`, { hint });
  let text: string;
  try {
    text = readCappedFile(path);
  } catch (err) {
    if (err instanceof FileTooLarge) throw fail(err.message, `check the path given to ${options.option}`);
    const missing = (err as { code?: string }).code === "ENOENT";
    throw fail(missing ? "no such file" : "cannot read the file", `check the path given to ${options.option}`);
  }
  const utf16 = utf16Problem(text);
  if (utf16 !== undefined) throw fail(utf16, SAVE_AS_UTF8);
  // An editor's byte order mark (Windows Notepad): JSON.parse stops at it ("invalid symbol" at line 1, column 1).
  if (text.charCodeAt(0) === 0xfeff) text = text.slice(1);
  const asYaml = options.yaml && yamlFile.test(path);
  let content: unknown;
  try {
    content = asYaml ? Bun.YAML.parse(text) : JSON.parse(text);
  } catch {
    const why = asYaml ? yamlProblem(text) : jsonProblem(text);
    throw fail(
      `not valid ${asYaml ? "YAML" : "JSON"}${why ? ` (${why})` : ""}`,
      asYaml && /reserved character @/.test(why ?? "")
        ? "a value that starts with @ (such as a Cedar policy with an @id annotation) must be quoted in YAML: - '@id(\"name\") forbid(...);'"
        : "check the file's syntax",
    );
  }
  const duplicate = duplicateKeysChecked ? (asYaml ? yamlDuplicateKey : jsonDuplicateKey)(text) : undefined;
  if (duplicate !== undefined)
    throw fail(
      duplicateKeyText(duplicate),
      "give each key once: merge the two (one list of policies, one network block, one entry per name)",
    );
  return content;
}

/**
 * Whether readConfigFile looks for a key given twice. Off only in the supervisor (`__supervise`), which
 * reads again the files the command that started it has read and checked (`run`, `restart`, `start`:
 * workload/option-file-keys.ts), so that it does not carry the `yaml` library (1 to 2 MiB private, measured) all its life.
 */
let duplicateKeysChecked = true;

/** For the supervisor: the files it reads were checked for duplicate keys by the command that started it. */
export function trustDuplicateKeysChecked(): void {
  duplicateKeysChecked = false;
}

/** A key given twice in one object of the file at `path` (read, parsed), as an INVALID_OPTION error. */
export function assertNoDuplicateKeys(path: string, options: Omit<ConfigFileOptions, "hint">): void {
  readConfigFile(path, options);
}

/** The file's content as the schema's output; the first problem is reported with its field path. */
export function decodeConfigFile<S extends v.GenericSchema>(
  path: string,
  schema: S,
  options: ConfigFileOptions,
): v.InferOutput<S> {
  const content = readConfigFile(path, options);
  // valibot's object and record schemas take a list as an object, so `[]` would pass as an object
  // with every field left out, the whole file (--audit-config: auditing on; --webhook-config: no
  // webhooks) or a field of it (`"toolsOverride": []`: no overrides; `"network": []`: the least
  // privilege), without a word.
  const list = listForObject(schema, content, []);
  if (list !== undefined)
    throw new McpmgrError(
      "INVALID_OPTION",
      `${options.option} ${path}: ${list.join(".") || "(root)"}: must be an object, not a list`,
      { hint: options.hint },
    );
  const parsed = v.safeParse(schema, content, { abortPipeEarly: true });
  if (parsed.success) return parsed.output;
  throw new McpmgrError("INVALID_OPTION", `${options.option} ${path}: ${issueText(schema, parsed.issues)}`, {
    hint: options.hint,
  });
}

const objectTypes = new Set(["object", "strict_object", "loose_object", "object_with_rest", "record"]);

/** The path of the first list in `value` where `schema` wants an object (or a record); undefined: none. */
function listForObject(schema: unknown, value: unknown, at: readonly string[]): string[] | undefined {
  const s = schema as {
    type?: string;
    wrapped?: unknown;
    entries?: Record<string, unknown>;
    value?: unknown;
    item?: unknown;
    options?: readonly { type?: string }[];
  };
  if (s.wrapped !== undefined) return listForObject(s.wrapped, value, at);
  if (value === null || typeof value !== "object") return undefined;
  const type = s.type ?? "";
  if (Array.isArray(value)) {
    if (objectTypes.has(type)) return [...at];
    if (type === "array") {
      for (const [i, item] of value.entries()) {
        const found = listForObject(s.item, item, [...at, String(i)]);
        if (found !== undefined) return found;
      }
      return undefined;
    }
    // A union that has no list among its forms but an object: the list is none of them.
    const forms = s.options ?? [];
    if (forms.some((form) => objectTypes.has(form.type ?? "")) && !forms.some((form) => form.type === "array"))
      return [...at];
    return undefined;
  }
  const fields = value as Record<string, unknown>;
  if (type === "record") {
    for (const [key, item] of Object.entries(fields)) {
      const found = listForObject(s.value, item, [...at, key]);
      if (found !== undefined) return found;
    }
  } else if (s.entries !== undefined) {
    for (const [key, entry] of Object.entries(s.entries)) {
      const found = listForObject(entry, fields[key], [...at, key]);
      if (found !== undefined) return found;
    }
  }
  return undefined;
}

/**
 * "field.path: message" for the first issue ("(root)" when the file as a whole is wrong). A field the
 * schema does not know, or one it needs and the file lacks, is said in words, with the nearest known
 * field for a typo (`failurePolicy` → `failure_policy`), not in valibot's ("Invalid key: Expected never").
 */
function issueText(schema: unknown, issues: readonly v.BaseIssue<unknown>[]): string {
  const issue = issues[0];
  const keys = issue?.path?.map((p) => String(p.key)) ?? [];
  const at = keys.join(".") || "(root)";
  const field = keys.at(-1);
  const parent = keys.slice(0, -1).join(".") || "(root)";
  if (issue?.kind === "schema" && field !== undefined) {
    if (issue.expected === "never") {
      const known = fieldsAt(schema, keys.slice(0, -1)) ?? [];
      const suggestion = didYouMean(closeMatches(field, known, { nearestOnly: true, limit: 1 }));
      return `${parent}: unknown field ${JSON.stringify(field)}${suggestion ? ` (${suggestion})` : ""}`;
    }
    if (issue.received === "undefined" && issue.expected === JSON.stringify(field)) {
      // A misspelt required field is missing and unknown at once (`typ` for `type`): the typo says more.
      for (const other of issues) {
        const otherKeys = other.path?.map((p) => String(p.key)) ?? [];
        const typo = otherKeys.at(-1);
        if (
          other.expected !== "never" ||
          typo === undefined ||
          otherKeys.slice(0, -1).join(".") !== keys.slice(0, -1).join(".")
        )
          continue;
        const suggestion = didYouMean(closeMatches(typo, [field], { nearestOnly: true, limit: 1 }));
        if (suggestion) return `${parent}: unknown field ${JSON.stringify(typo)} (${suggestion})`;
      }
      return `${parent}: the field ${JSON.stringify(field)} is missing`;
    }
  }
  return `${at}: ${issue === undefined ? "invalid" : issueWithoutValue(issue)}`;
}

/** The field names the object schema at `keys` (a path into the file) knows; undefined: not an object there. */
function fieldsAt(schema: unknown, keys: readonly string[]): string[] | undefined {
  type Node = { wrapped?: unknown; entries?: Record<string, unknown>; value?: unknown; item?: unknown; type?: string };
  const unwrap = (node: unknown): Node | undefined => {
    let current = node as Node | undefined;
    while (current?.wrapped !== undefined) current = current.wrapped as Node;
    return current;
  };
  let node = unwrap(schema);
  for (const key of keys) {
    if (node === undefined) return undefined;
    node = unwrap(node.entries ? node.entries[key] : node.type === "record" ? node.value : node.item);
  }
  return node?.entries === undefined ? undefined : Object.keys(node.entries);
}

/** A file that holds one value (`--oidc-client-secret-file` and the like): its text, trimmed, never empty. */
export function readOptionFile(option: string, path: string): string {
  let text: string;
  try {
    text = readCappedFile(path).trim();
  } catch (err) {
    const why = err instanceof FileTooLarge ? err.message : "cannot read the file";
    throw new McpmgrError("INVALID_OPTION", `--${option} ${JSON.stringify(path)}: ${why}`, {
      hint: "give the path of a readable file",
    });
  }
  if (text === "")
    throw new McpmgrError("INVALID_OPTION", `--${option} ${path}: the file is empty`, {
      hint: "put the value in the file",
    });
  return text;
}
