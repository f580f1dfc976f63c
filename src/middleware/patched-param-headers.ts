/**
 * A mutating webhook's patch of a 2026-07-28 `tools/call` and the `Mcp-Param-*` headers the client
 * mirrored its arguments into (`x-mcp-header`): the server checks each header against the body, so a
 * header left as the client sent it beside a patched argument made the server refuse the call
 * (HeaderMismatch). In front of a remote mcpmgr does not know the tool's declarations, but the client's
 * own headers say which values were mirrored: a header follows the one argument that carried its value
 * and was changed. When more than one argument carried that value, which one the header mirrors cannot
 * be told, and the patch is refused rather than guessed at.
 */
import { isObject } from "../objects.ts";
import { headerValue } from "../proxy/remote-client/request-headers.ts";
import { argumentAt, argumentText, decodeHeaderValue } from "../proxy/tool-headers.ts";

interface Leaf {
  readonly path: readonly string[];
  readonly value: string | number | boolean;
}

/** The primitive values in `args`, by their path of object keys (`x-mcp-header` is reachable only so). */
function leaves(args: unknown, path: readonly string[] = []): Leaf[] {
  if (!isObject(args)) return [];
  const found: Leaf[] = [];
  for (const [key, value] of Object.entries(args)) {
    const at = [...path, key];
    if (typeof value === "string" || typeof value === "number" || typeof value === "boolean")
      found.push({ path: at, value });
    else if (isObject(value)) found.push(...leaves(value, at));
  }
  return found;
}

/** Whether a header's decoded text is how `value` is mirrored (integers compare by value: `42.0` is 42). */
function mirrors(value: unknown, decoded: string): boolean {
  if (argumentText(value) === decoded) return true;
  return (
    typeof value === "number" &&
    Number.isInteger(value) &&
    /^-?\d+(?:\.0+)?$/.test(decoded) &&
    Number(decoded) === value
  );
}

/**
 * Makes `headers` follow the arguments a patch changed (`before` → `after`): a header whose argument
 * now has another value carries it, one whose argument is gone is dropped. Returns why the patch
 * cannot be followed, or undefined.
 */
export function followPatchedArguments(headers: Headers, before: unknown, after: unknown): string | undefined {
  const names = [...headers.keys()].filter((name) => name.startsWith("mcp-param-"));
  if (names.length === 0) return undefined;
  const original = leaves(before);
  for (const name of names) {
    const decoded = decodeHeaderValue(headers.get(name) ?? "");
    if (decoded === undefined) continue; // malformed: the server refuses it as the client sent it
    const candidates = original.filter((leaf) => mirrors(leaf.value, decoded));
    const changed = candidates.filter((leaf) => argumentAt(after, leaf.path) !== leaf.value);
    if (changed.length === 0) continue;
    if (candidates.length > 1)
      return `it changed an argument mirrored in the ${name} header, and ${candidates.length} arguments carried that value, so which one the header follows cannot be told`;
    const now = argumentAt(after, (changed[0] as Leaf).path);
    if (now === undefined || now === null) {
      headers.delete(name);
      continue;
    }
    const text = argumentText(now);
    if (text === undefined)
      return `it made the argument mirrored in the ${name} header something a header cannot carry`;
    headers.set(name, headerValue(text));
  }
  return undefined;
}
