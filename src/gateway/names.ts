/**
 * The names a gateway gives its group's tools and prompts. Every name is `<workload>_<name>`
 * by default; with `when-needed` a name keeps its own spelling unless another workload (or
 * another prefixed name) uses it too. Workload names cannot contain `_`, so in `always` mode
 * two workloads can never produce the same name; the suffix rule below only matters for
 * `when-needed` and for a server that lists one name twice. The outcome depends only on the
 * set of entries, never on the order workloads joined, so every gateway session and every
 * restart agrees on the names.
 */

import { printable } from "../printable.ts";

export type PrefixMode = "always" | "when-needed";

/**
 * A tool name as the MCP specification asks for it (1–128 of A–Z a–z 0–9 _ - .): anything else
 * (spaces, line feeds, escape sequences) is refused by the gateway rather than listed and logged.
 */
export const TOOL_NAME = /^[A-Za-z0-9_.-]{1,128}$/;

/**
 * A prompt name (MCP sets no rule but a non-empty string): one to 1,024 characters, none of them a
 * control character, a format character (bidirectional overrides and isolates, zero-width spaces and
 * joiners, the byte order mark), a line or paragraph separator, or half a surrogate pair. Those are
 * not shown as themselves: `summarize\u200b` reads as another workload's `summarize`, and a
 * right-to-left override makes a name read backwards, so a workload could pass its prompt off as
 * another's. A longer name is no one's prompt but a workload's way to fill every client's list.
 * The zero-width joiner and non-joiner are kept between two visible characters: they are how emoji
 * sequences (`👨‍💻`) and words in Persian, Urdu and Indic scripts (`می‌خواهم`) are written, and `look`
 * leaves them out, so one beside another workload's name still makes both prefixed.
 */
const SHOWN = String.raw`[^\p{Cc}\p{Cf}\p{Zl}\p{Zp}\p{Cs}]|(?<=[^\p{Cc}\p{Cf}\p{Zl}\p{Zp}\p{Cs}\s])[\u200c\u200d](?=[^\p{Cc}\p{Cf}\p{Zl}\p{Zp}\p{Cs}\s])`;
export const PROMPT_NAME = new RegExp(`^(?:${SHOWN}){1,1024}$`, "u");

/**
 * A resource URI or URI template a client can be shown: none of the characters `PROMPT_NAME` leaves
 * out. A URI is a resource's name in every client's list; `notes://docs/readme\u200b` or one with a
 * right-to-left override would read as another workload's URI, and a client that picks it reads the
 * hostile workload's text. (RFC 3986 allows none of these characters raw; RFC 3987 forbids the
 * bidirectional ones in IRIs.)
 */
export const RESOURCE_URI = new RegExp(`^(?:${SHOWN})+$`, "u");

/**
 * What a name looks like, for telling names apart with `when-needed`: its NFKC form, so that two
 * spellings a client shows alike (`é` as one character or as `e` and a combining accent, a full-width
 * letter, a ligature) count as the same name and are both prefixed, never both kept bare; joiners
 * (`PROMPT_NAME`) are not shown, so they do not count either.
 */
function look(name: string): string {
  return name.normalize("NFKC").replace(/[\u200c\u200d]/g, "");
}

/** A server-chosen name inside one of the gateway's log lines: quoted, nothing in it can end the line. */
export function quoted(name: string): string {
  return printable(JSON.stringify(name));
}

export interface OwnedName {
  readonly workload: string;
  readonly name: string;
}

export interface NameAssignment {
  /** Gateway name → the workload's own name. */
  readonly byGatewayName: ReadonlyMap<string, OwnedName>;
  /** `${workload}\u0000${name}` → gateway name. */
  readonly byOwnedName: ReadonlyMap<string, string>;
  /** Human-readable lines about names that needed a suffix, for the log and for tests. */
  readonly collisions: readonly string[];
}

export function ownedKey(workload: string, name: string): string {
  return `${workload}\u0000${name}`;
}

export function prefixed(workload: string, name: string): string {
  return `${workload}_${name}`;
}

function compareOwned(a: OwnedName, b: OwnedName): number {
  if (a.workload !== b.workload) return a.workload < b.workload ? -1 : 1;
  return a.name < b.name ? -1 : a.name > b.name ? 1 : 0;
}

export function assignNames(entries: readonly OwnedName[], mode: PrefixMode): NameAssignment {
  const sorted = [...entries].sort(compareOwned);
  const wanted = new Map<string, string>();
  const prefixNotes: string[] = [];
  if (mode === "always") {
    for (const entry of sorted) wanted.set(ownedKey(entry.workload, entry.name), prefixed(entry.workload, entry.name));
  } else {
    // A bare name is kept only when no other entry claims it, bare or prefixed; prefixing can
    // create new clashes (a bare `a_x` against `a` + `x`), so repeat until nothing changes.
    const isPrefixed = new Set<string>();
    let changed = true;
    while (changed) {
      changed = false;
      const claims = new Map<string, number>();
      const nameOf = (entry: OwnedName) => {
        const key = ownedKey(entry.workload, entry.name);
        return isPrefixed.has(key) ? prefixed(entry.workload, entry.name) : entry.name;
      };
      for (const entry of sorted) claims.set(look(nameOf(entry)), (claims.get(look(nameOf(entry))) ?? 0) + 1);
      for (const entry of sorted) {
        const key = ownedKey(entry.workload, entry.name);
        if (!isPrefixed.has(key) && (claims.get(look(entry.name)) ?? 0) > 1) {
          isPrefixed.add(key);
          changed = true;
        }
      }
    }
    // By look: names that only look alike are one clash, each workload named with its own spelling.
    const clashes = new Map<string, OwnedName[]>();
    for (const entry of sorted) {
      const key = ownedKey(entry.workload, entry.name);
      wanted.set(key, isPrefixed.has(key) ? prefixed(entry.workload, entry.name) : entry.name);
      if (isPrefixed.has(key)) clashes.set(look(entry.name), [...(clashes.get(look(entry.name)) ?? []), entry]);
    }
    for (const entries of clashes.values()) {
      const spellings = [...new Set(entries.map((entry) => quoted(entry.name)))].join(" / ");
      prefixNotes.push(
        `${spellings} is offered by ${entries.map((entry) => entry.workload).join(", ")}: named ${entries.map((entry) => quoted(prefixed(entry.workload, entry.name))).join(", ")}`,
      );
    }
  }
  // Whatever still clashes (a server listing a name twice) gets `_2`, `_3`… in sorted order.
  const byGatewayName = new Map<string, OwnedName>();
  const byOwnedName = new Map<string, string>();
  const collisions: string[] = [...prefixNotes];
  for (const entry of sorted) {
    const key = ownedKey(entry.workload, entry.name);
    if (byOwnedName.has(key)) continue; // a duplicate of an entry already named
    const base = wanted.get(key) as string;
    let name = base;
    for (let n = 2; byGatewayName.has(name); n++) name = `${base}_${n}`;
    if (name !== base) {
      const holder = byGatewayName.get(base) as OwnedName;
      collisions.push(
        `${entry.workload}'s ${quoted(entry.name)} and ${holder.workload}'s ${quoted(holder.name)} both map to ${quoted(base)}; the former is ${quoted(name)}`,
      );
    }
    byGatewayName.set(name, entry);
    byOwnedName.set(key, name);
  }
  return { byGatewayName, byOwnedName, collisions };
}
