/**
 * `--authz-config FILE` (JSON or YAML, docs/file-formats.md):
 *   {"version":"1.0","type":"cedarv1","cedar":{"policies":["permit(...);"],"entities_json":"[]"}}
 * The policies are parsed by the Cedar engine itself at start-up, so a syntax error is
 * reported before anything runs, and so is a policy whose scope can never match (cedar-scope.ts):
 * by the command that reads the file (`run`, `proxy`, `gateway`, a short-lived process or one the
 * user watches), and again by the Cedar evaluator when a supervisor loads them there
 * (middleware/cedar-engine.ts), so that a supervisor never loads the engine itself.
 */
import * as v from "valibot";
import { McpmgrError } from "../errors.ts";
import { CEDAR_NAMES_HINT, unmatchableScope } from "./cedar-scope.ts";
import { decodeConfigFile } from "./config-file.ts";

export interface AuthzConfig {
  readonly policies: string;
  readonly entities: readonly unknown[];
  /** The file they came from, for the evaluator's refusal of them (absent: built in code). */
  readonly source?: string;
}

/** What is wrong with a policy set, in the words of the option's error. */
export interface PolicyProblem {
  readonly why: string;
  readonly hint: string;
}

let checkedHere = true;

/**
 * For the supervisor: the command that started it checked the policies, and the Cedar evaluator
 * checks them again when the supervisor loads them there; the supervisor must not load the engine.
 */
export function leavePolicyChecksToEvaluator(): void {
  checkedHere = false;
}

/** The words for policies the engine failed on (a WebAssembly trap) rather than refused. */
export function engineTrapped(err: Error): PolicyProblem {
  return {
    why: `the Cedar engine failed on the policies (${err.message})`,
    hint: "look for a policy nested very deeply (hundreds of parentheses) and write it flatter",
  };
}

/** Why the Cedar engine refuses `policies` (or a scope that never matches), or undefined. Loads the engine. */
export function policyProblem(policies: string, entities: readonly unknown[]): PolicyProblem | undefined {
  // Required here, not imported at the top: loading the Cedar engine compiles its WebAssembly
  // (~100 ms), which every `run`, `proxy` and `gateway` without --authz-config would pay.
  const { checkParsePolicySet } =
    require("@cedar-policy/cedar-wasm/nodejs") as typeof import("@cedar-policy/cedar-wasm/nodejs");
  const check = checkParsePolicySet({ staticPolicies: policies });
  if (check.type === "failure")
    return {
      why: `the Cedar policies do not parse: ${check.errors.map((e) => e.message).join("; ")}`,
      hint: "check the policy syntax (https://docs.cedarpolicy.com)",
    };
  const unmatchable = unmatchableScope(policies, entities);
  return unmatchable === undefined ? undefined : { why: unmatchable, hint: CEDAR_NAMES_HINT };
}

const fileSchema = v.strictObject({
  // YAML reads an unquoted `version: 1.0` as the number 1; Go's YAML (ToolHive's files) reads it as "1.0".
  version: v.union([v.literal("1.0"), v.literal(1)], 'must be "1.0"'),
  type: v.literal("cedarv1", 'must be "cedarv1"'),
  cedar: v.strictObject({
    policies: v.pipe(v.array(v.string()), v.minLength(1, "must hold at least one policy")),
    entities_json: v.optional(v.string(), "[]"),
  }),
});

export function authzConfig(path: string | undefined): AuthzConfig | undefined {
  if (path === undefined) return undefined;
  const expected = 'expected {"version":"1.0","type":"cedarv1","cedar":{"policies":["permit(...);"]}}';
  const fail = (why: string, hint = expected) =>
    new McpmgrError("INVALID_OPTION", `--authz-config ${path}: ${why}`, { hint });
  const file = decodeConfigFile(path, fileSchema, { option: "--authz-config", yaml: true, hint: expected });
  const policies = file.cedar.policies.join("\n");
  let entities: unknown;
  try {
    entities = JSON.parse(file.cedar.entities_json);
  } catch {
    throw fail("cedar.entities_json is not valid JSON");
  }
  if (!Array.isArray(entities)) throw fail("cedar.entities_json must be a JSON array of entities");
  let problem: PolicyProblem | undefined;
  try {
    problem = checkedHere ? policyProblem(policies, entities) : undefined;
  } catch (err) {
    // The engine traps on some input (a policy nested about a thousand levels deep overflows its stack).
    if (!(err instanceof WebAssembly.RuntimeError)) throw err;
    problem = engineTrapped(err);
  }
  if (problem !== undefined) throw fail(problem.why, problem.hint);
  return Object.freeze({ policies, entities, source: path });
}
