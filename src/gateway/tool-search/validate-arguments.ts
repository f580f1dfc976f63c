/**
 * `call_tool` checks a call's arguments against the tool's real inputSchema before the gateway forwards
 * it, so the model learns what is wrong in one short sentence instead of from a server's stack trace.
 * The validator is @cfworker/json-schema (drafts 4, 7, 2019-09, 2020-12; no code generation, ~23 KB):
 * ajv is several times larger and compiles schemas with `new Function`.
 */
import { type OutputUnit, type SchemaDraft, Validator } from "@cfworker/json-schema";

export type ArgumentCheck = { readonly ok: true } | { readonly ok: false; readonly problems: readonly string[] };

const validators = new WeakMap<object, Validator | null>();
const MAX_PROBLEMS = 5;

function draftOf(schema: Record<string, unknown>): SchemaDraft {
  const declared = typeof schema.$schema === "string" ? schema.$schema : "";
  if (declared.includes("draft-04")) return "4";
  if (declared.includes("draft-07") || declared.includes("draft-06")) return "7";
  if (declared.includes("2019-09")) return "2019-09";
  return "2020-12"; // MCP's default dialect for tool schemas
}

const MAX_SCHEMA_DEPTH = 64;
/** Keywords whose values are instances, not schemas: kept as they are. */
const DATA_KEYWORDS: ReadonlySet<string> = new Set(["const", "enum", "default", "examples"]);

/**
 * The schema without its regular expressions, or undefined when they cannot simply be left out.
 * A workload chooses them and a caller the text they run on, in the gateway's one thread: a
 * catastrophic `pattern` ("^(a+)+$" on 30 characters takes seconds) would stall every workload's
 * calls. Leaving a `pattern` out only lets more through, and the server still judges its
 * arguments; `patternProperties` decides which properties count as additional, so a schema with
 * it (or nested past MAX_SCHEMA_DEPTH) is not checked here at all.
 */
function withoutPatterns(value: unknown, depth = 0): unknown {
  if (depth > MAX_SCHEMA_DEPTH) return undefined;
  if (Array.isArray(value)) {
    const items = value.map((item) => withoutPatterns(item, depth + 1));
    return items.some((item, i) => item === undefined && value[i] !== undefined) ? undefined : items;
  }
  if (typeof value !== "object" || value === null) return value;
  const out: Record<string, unknown> = {};
  for (const [key, child] of Object.entries(value)) {
    if (key === "patternProperties") return undefined;
    if (key === "pattern" && typeof child === "string") continue;
    if (DATA_KEYWORDS.has(key)) {
      out[key] = child;
      continue;
    }
    const copy = withoutPatterns(child, depth + 1);
    if (copy === undefined && child !== undefined) return undefined;
    out[key] = copy;
  }
  return out;
}

/** null when the schema itself cannot be compiled: then the server is left to judge the arguments. */
function validatorFor(schema: Record<string, unknown>): Validator | null {
  let validator = validators.get(schema);
  if (validator === undefined) {
    try {
      const checked = withoutPatterns(schema);
      validator = checked === undefined ? null : new Validator(checked as never, draftOf(schema), false);
    } catch {
      validator = null;
    }
    validators.set(schema, validator);
  }
  return validator;
}

/** "#/options/0/mode" → "options[0].mode" (JSON Pointer escapes undone). */
function location(instanceLocation: string): string {
  const parts = instanceLocation
    .replace(/^#\/?/, "")
    .split("/")
    .filter((part) => part.length > 0)
    .map((part) => decodeURIComponent(part).replace(/~1/g, "/").replace(/~0/g, "~"));
  let out = "";
  for (const part of parts) out += /^\d+$/.test(part) ? `[${part}]` : out ? `.${part}` : part;
  return out;
}

// Errors that only say "a child failed": the child's own error says what is wrong.
const WRAPPER_KEYWORDS = new Set(["properties", "items", "prefixItems", "allOf", "$ref", "additionalItems"]);

function describe(unit: OutputUnit, schema: Record<string, unknown>): string | undefined {
  if (WRAPPER_KEYWORDS.has(unit.keyword)) return undefined;
  const where = location(unit.instanceLocation);
  if (unit.keyword === "additionalProperties" || unit.keyword === "unevaluatedProperties") return undefined;
  if (unit.keyword === "false") {
    const allowed = Object.keys((schema.properties as Record<string, unknown> | undefined) ?? {});
    const parameters = where.includes(".") || where.includes("[") ? "" : ` (parameters: ${allowed.join(", ")})`;
    return `"${where}" is not a parameter of this tool${parameters}`;
  }
  const required = /required property "([^"]+)"/.exec(unit.error);
  if (unit.keyword === "required" && required) {
    return `missing required argument "${where ? `${where}.` : ""}${required[1]}"`;
  }
  const type = /Instance type "([^"]+)" is invalid\. Expected (.+)\./.exec(unit.error);
  if (unit.keyword === "type" && type) {
    return `"${where || "arguments"}" must be of type ${type[2]?.replace(/"/g, "")}, not ${type[1]}`;
  }
  if (unit.keyword === "enum")
    return `"${where}" must be one of ${unit.error.replace(/^.*any of /, "").replace(/\.$/, "")}`;
  return `"${where || "arguments"}": ${unit.error.replace(/^Instance /, "value ").replace(/\.$/, "")}`;
}

/** Checks `args` against `inputSchema`; on failure, up to five problems, each one short sentence. */
export function checkArguments(inputSchema: unknown, args: unknown): ArgumentCheck {
  if (typeof inputSchema !== "object" || inputSchema === null || Array.isArray(inputSchema)) return { ok: true };
  const schema = inputSchema as Record<string, unknown>;
  const validator = validatorFor(schema);
  if (!validator) return { ok: true };
  let result: ReturnType<Validator["validate"]>;
  try {
    result = validator.validate(args ?? {});
  } catch {
    return { ok: true }; // a broken schema (an unresolvable $ref): not the caller's mistake
  }
  if (result.valid) return { ok: true };
  const problems = [...new Set(result.errors.map((unit) => describe(unit, schema)).filter((p) => p !== undefined))];
  if (problems.length === 0) problems.push(result.errors[0]?.error ?? "the arguments do not match the schema");
  return { ok: false, problems: problems.slice(0, MAX_PROBLEMS) };
}
