/**
 * valibot issues → one readable line: `servers[3].transport: must be one of stdio, sse,
 * streamable-http (got "http")`. Registry files are written by hand, so the message names
 * the field the way the user wrote it, and says what was expected and what was found.
 */
import type * as v from "valibot";
import { closeMatches } from "../close-matches.ts";

/** `[3].transport`, `servers[0].env[1].name`; `prefix` is the path of the validated value. */
function issuePath(issue: v.BaseIssue<unknown>, prefix = ""): string {
  return _pathText(issue.path ?? [], prefix);
}

function _pathText(items: readonly v.IssuePathItem[], prefix = ""): string {
  let path = prefix;
  for (const item of items) {
    const key = item.key;
    if (typeof key === "number") path += `[${key}]`;
    else if (typeof key === "string")
      path += /^[A-Za-z_$][\w$]*$/.test(key) ? (path === "" ? key : `.${key}`) : `[${JSON.stringify(key)}]`;
  }
  return path;
}

/**
 * "path: message" for the most useful issue, with a count of the others. A misspelt field
 * shows up twice (unknown "permisions", missing "permissions"); the unknown one is reported,
 * with the missing one as the suggestion.
 */
export function describeIssues(issues: readonly v.BaseIssue<unknown>[], prefix = ""): string {
  const first = issues.find(_isUnknownField) ?? issues[0];
  if (first === undefined) return prefix === "" ? "is not valid" : `${prefix}: is not valid`;
  const path = issuePath(first, prefix);
  const more = issues.length > 1 ? ` (and ${issues.length - 1} more problem${issues.length > 2 ? "s" : ""})` : "";
  return `${path === "" ? "(top level)" : path}: ${issueMessage(first)}${_suggestion(first, issues)}${more}`;
}

function _isUnknownField(issue: v.BaseIssue<unknown>): boolean {
  return issue.type === "strict_object" && issue.expected === "never";
}

/** " (did you mean permissions?)" when a required field next to the unknown one is missing. */
function _suggestion(issue: v.BaseIssue<unknown>, issues: readonly v.BaseIssue<unknown>[]): string {
  if (!_isUnknownField(issue)) return "";
  const parent = _pathText(issue.path?.slice(0, -1) ?? []);
  const key = issue.path?.at(-1)?.key;
  const missing = issues
    .filter(
      (other) =>
        other.received === "undefined" && other.path !== undefined && _pathText(other.path.slice(0, -1)) === parent,
    )
    .map((other) => other.path?.at(-1)?.key)
    .filter((name): name is string => typeof name === "string");
  const [best] =
    typeof key === "string"
      ? closeMatches(key, missing, { maxDistance: Math.max(2, Math.floor(key.length / 3)), limit: 1 })
      : [];
  return best === undefined ? " (check the spelling)" : ` (did you mean ${best}?)`;
}

/** valibot's generic "Invalid type: Expected X but received Y" rewritten for people. */
function issueMessage(issue: v.BaseIssue<unknown>): string {
  const generic = issue.message.startsWith("Invalid type:") || issue.message.startsWith("Invalid key:");
  if (!generic) return issue.message + _gotText(issue);
  if (issue.type === "strict_object" || issue.type === "object" || issue.type === "loose_object") {
    if (issue.expected === "never") return "is not a known field";
    if (issue.received === "undefined" && issue.path !== undefined) return "is required";
  }
  if (issue.received === "undefined") return "is required";
  return `must be ${_expectedText(issue.expected ?? "")} (got ${issue.received})`;
}

/** " (got "http")" for a scalar value that was refused, so the user sees what the file says. */
function _gotText(issue: v.BaseIssue<unknown>): string {
  const input = issue.input;
  if (typeof input !== "string" && typeof input !== "number" && typeof input !== "boolean") return "";
  if (input === "") return "";
  const shown = JSON.stringify(input);
  return ` (got ${shown.length > 60 ? `${shown.slice(0, 57)}..."` : shown})`;
}

function _expectedText(expected: string): string {
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
