/**
 * valibot issues → one readable line: `servers[3].transport: must be one of stdio, sse,
 * streamable-http (got "http")`. Registry files are written by hand, so the message names
 * the field the way the user wrote it, and says what was expected and what was found.
 */
import type * as v from "valibot";

/** `[3].transport`, `servers[0].env[1].name`; `prefix` is the path of the validated value. */
export function issuePath(issue: v.BaseIssue<unknown>, prefix = ""): string {
  let path = prefix;
  for (const item of issue.path ?? []) {
    const key = item.key;
    if (typeof key === "number") path += `[${key}]`;
    else if (typeof key === "string") path += /^[A-Za-z_$][\w$]*$/.test(key) ? (path === "" ? key : `.${key}`) : `[${JSON.stringify(key)}]`;
  }
  return path;
}

/** "path: message" for the first issue, with a count of the others. */
export function describeIssues(issues: readonly v.BaseIssue<unknown>[], prefix = ""): string {
  const first = issues[0];
  if (first === undefined) return prefix === "" ? "is not valid" : `${prefix}: is not valid`;
  const path = issuePath(first, prefix);
  const more = issues.length > 1 ? ` (and ${issues.length - 1} more problem${issues.length > 2 ? "s" : ""})` : "";
  return `${path === "" ? "(top level)" : path}: ${issueMessage(first)}${more}`;
}

/** valibot's generic "Invalid type: Expected X but received Y" rewritten for people. */
export function issueMessage(issue: v.BaseIssue<unknown>): string {
  const generic = issue.message.startsWith("Invalid type:") || issue.message.startsWith("Invalid key:");
  if (!generic) return issue.message;
  if (issue.type === "strict_object" || issue.type === "object" || issue.type === "loose_object") {
    if (issue.expected === "never") return "is not a known field (check the spelling)";
    if (issue.received === "undefined" && issue.path !== undefined) return "is required";
  }
  if (issue.received === "undefined") return "is required";
  return `must be ${expectedText(issue.expected ?? "")} (got ${issue.received})`;
}

function expectedText(expected: string): string {
  switch (expected) {
    case "string":
      return "a string";
    case "number":
      return "a number";
    case "boolean":
      return "true or false";
    case "Array":
      return "a list";
    case "Object":
      return "an object";
    default: {
      // picklists arrive as ("a" | "b" | "c")
      const choices = /^\((.*)\)$/.exec(expected)?.[1];
      return choices !== undefined ? `one of ${choices.split(" | ").join(", ")}` : expected;
    }
  }
}
