/**
 * `--tools` and `--tools-override` checked against what the server really offers, once: a
 * registry entry's tools are checked before the start (config/tools-policy.ts), but a package,
 * image or remote URL says what it offers only when a client lists its tools. The first complete
 * tools/list a client gets (every page, followed by its cursors) is watched as it passes the tool
 * filter, which rewrites it anyway; no request of mcpmgr's own is made, so servers that want a
 * user's credentials, or list tools only to clients of some kind, are asked as those clients ask.
 * Names the server does not list are warned about once; after that the watch costs nothing. What it
 * holds meanwhile is bounded: 16 listings followed at once, 10,000 names each.
 */
import { closeMatches, didYouMean } from "../close-matches.ts";
import type { ToolsPolicy } from "../config/tools-policy.ts";
import { excerpt } from "../printable.ts";

/** Chains of pages followed at once (clients listing concurrently); more are dropped, not kept. */
const maxOpenChains = 16;
/** Names a chain may hold while its pages go on: a server paging without end is not followed further. */
const maxNamesHeld = 10_000;
/** The server's tools named in the warning; the rest are counted. */
const namesShown = 12;
/** A server's tool name is shown up to this length, on one line: the server chose it. */
const nameShownChars = 64;

export interface ToolListWatch {
  /** Whether the first complete listing is still awaited (the filter skips all this once it is not). */
  readonly waiting: boolean;
  /** One tools/list page: the cursor its request gave (undefined: a first page), its tools' names, its nextCursor. */
  page(cursor: string | undefined, names: readonly string[], nextCursor: string | undefined): void;
}

/** Watches for the first complete listing; `warn` gets one line when the options name tools it lacks. */
export function watchToolsOffered(policy: ToolsPolicy, warn: (text: string) => void): ToolListWatch {
  const named = [...new Set([...(policy.allowed ?? []), ...policy.overrides.keys()])];
  let waiting = named.length > 0;
  /** nextCursor awaited → the names of the chain's pages so far. */
  const chains = new Map<string, Set<string>>();
  const complete = (offered: ReadonlySet<string>) => {
    waiting = false;
    chains.clear();
    const missing = named.filter((name) => !offered.has(name));
    if (missing.length > 0) warn(notOffered(policy, missing, offered));
  };
  return {
    get waiting() {
      return waiting;
    },
    page(cursor, names, nextCursor) {
      if (!waiting) return;
      let seen: Set<string>;
      if (cursor === undefined) seen = new Set();
      else {
        const chain = chains.get(cursor);
        // A page of a listing that began before the watch (or a cursor the client made up): not a complete one.
        if (chain === undefined) return;
        chains.delete(cursor);
        seen = chain;
      }
      for (const name of names) seen.add(name);
      if (nextCursor === undefined) return complete(seen);
      if (chains.size < maxOpenChains && seen.size <= maxNamesHeld) chains.set(nextCursor, seen);
    },
  };
}

function notOffered(policy: ToolsPolicy, missing: readonly string[], offered: ReadonlySet<string>): string {
  const all = [...offered];
  const described = (names: readonly string[]) =>
    names
      .map((name) => {
        const suggestion = didYouMean(
          closeMatches(name, all, { nearestOnly: true, limit: 3 }).map((match) => excerpt(match, nameShownChars)),
        );
        return suggestion ? `${name} (${suggestion})` : name;
      })
      .join(", ");
  const inTools = missing.filter((name) => policy.allowed?.has(name));
  const overridden = missing.filter((name) => !policy.allowed?.has(name));
  const options = [
    ...(inTools.length > 0 ? [`--tools names ${described(inTools)}`] : []),
    ...(overridden.length > 0 ? [`--tools-override names ${described(overridden)}`] : []),
  ].join(" and ");
  const listed =
    all.length === 0
      ? "it lists no tools at all"
      : `it lists ${all.length} tool${all.length === 1 ? "" : "s"}: ${all
          .slice(0, namesShown)
          .map((name) => excerpt(name, nameShownChars))
          .join(", ")}${all.length > namesShown ? ", …" : ""}`;
  const them = missing.length === 1 ? "it" : "them";
  return `${options}, which the server does not offer, so clients do not get ${them} (${listed}); the names are the server's own, case included: correct the option and run the workload again`;
}
