/**
 * mcpmgr's directories must be out of other users' reach. Whoever can rename an entry in one of
 * them, or in a folder above them, can swap a workload's record for their own, and the next
 * `start` runs their command, their image and their volumes as this user (or feeds this user's
 * secrets to their server). So, before a command uses them, every existing folder from each of
 * mcpmgr's directories up to `/` must belong to this user or root, and must not be writable by
 * every user unless it is sticky (`/tmp`: there nobody renames another's entries). A folder
 * another user made first (`MCPMGR_HOME=/tmp/mcpmgr`, made by them before this user's first run)
 * fails that. Group-writable folders pass: a private group per user is common, and the group is
 * the user's choice. Links on the way count as their owner's too. Root run with a user's HOME
 * (`sudo -E`, a documented way to configure that user's AI clients) trusts that user's folders:
 * they could not escalate through records more than through the HOME root chose to use.
 */
import { lstatSync, realpathSync, type Stats, statSync } from "node:fs";
import { dirname } from "node:path";
import { McpmgrError } from "../errors.ts";
import type { McpmgrPaths } from "./paths.ts";

const WRITABLE_BY_OTHERS = 0o002;
const STICKY = 0o1000;

/**
 * `dir`'s entry, or undefined when there is none to check: missing, on the way through a file
 * (ENOTDIR) or a folder this user cannot search (EACCES). Nothing can be read through such a
 * path either, so the command itself reports it, as before this check, in its own words.
 */
function entryOf(dir: string, follow: boolean): Stats | undefined {
  try {
    return (follow ? statSync : lstatSync)(dir, { throwIfNoEntry: false });
  } catch {
    return undefined;
  }
}

/** Why `dir` (a folder on the way to one of mcpmgr's directories) is in another user's reach, if it is. */
function reachOfOthers(dir: string, owners: ReadonlySet<number>): string | undefined {
  const link = entryOf(dir, false);
  if (link === undefined) return undefined;
  if (link.isSymbolicLink() && !owners.has(link.uid)) return `the link ${dir} belongs to uid ${link.uid}`;
  const info = link.isSymbolicLink() ? entryOf(dir, true) : link;
  if (info === undefined) return undefined;
  if (!owners.has(info.uid)) return `${dir} belongs to uid ${info.uid}`;
  if ((info.mode & WRITABLE_BY_OTHERS) !== 0 && (info.mode & STICKY) === 0)
    return `${dir} can be written by every user`;
  return undefined;
}

/**
 * Whose files and folders mcpmgr's user may trust: its own, root's, and when it is root, the owner
 * of the HOME in use (`sudo -E`, see above). `home`: that HOME.
 */
export function trustedOwners(uid: number, home: string | undefined = process.env.HOME): Set<number> {
  const owners = new Set([uid, 0]);
  const homeOwner = uid === 0 && home ? entryOf(home, true)?.uid : undefined;
  if (homeOwner !== undefined) owners.add(homeOwner);
  return owners;
}

/**
 * Refuses mcpmgr's directories when another user could replace what is in them (see above). POSIX
 * only. `home`: the HOME in use, whose owner root trusts.
 */
export function assertPrivateDirectories(
  paths: McpmgrPaths,
  uid: number | undefined = process.getuid?.(),
  home: string | undefined = process.env.HOME,
): void {
  assertPrivateFolders(
    [paths.configDir, paths.dataDir, paths.stateDir, paths.runtimeDir, paths.logDir],
    "they could replace its workloads' records",
    uid,
    home,
  );
}

/**
 * The same rule for other folders of mcpmgr's (the OAuth lock folder, outside MCPMGR_HOME);
 * `consequence` says what another user could do there ("they could …").
 */
export function assertPrivateFolders(
  starts: readonly string[],
  consequence: string,
  uid: number | undefined = process.getuid?.(),
  home: string | undefined = process.env.HOME,
): void {
  if (uid === undefined) return;
  const owners = trustedOwners(uid, home);
  const seen = new Set<string>();
  for (const [start, path] of starts.flatMap((start) => wayUp(start).map((path) => [start, path] as const))) {
    // Walking up; a folder seen already had its whole way up checked.
    for (let dir = path; !seen.has(dir); dir = dirname(dir)) {
      seen.add(dir);
      const why = reachOfOthers(dir, owners);
      if (why !== undefined) {
        throw new McpmgrError(
          "STATE_UNSAFE",
          `mcpmgr's folder ${start} is in another user's reach: ${why}, so ${consequence}`,
          {
            hint: "point MCPMGR_HOME (or XDG_*_HOME, XDG_RUNTIME_DIR) at a folder only you can write to, e.g. under your home, or fix the folder's owner and mode",
          },
        );
      }
      if (dirname(dir) === dir) break;
    }
  }
}

/**
 * Why a file mcpmgr would trust (a container engine's socket it found by its usual place) is in
 * another user's reach, if it is: it belongs to another user, or a folder on its way (up to `/`,
 * through links) fails the rule above. Undefined when it is not there.
 */
export function fileInOthersReach(
  path: string,
  uid: number | undefined = process.getuid?.(),
  home: string | undefined = process.env.HOME,
): string | undefined {
  if (uid === undefined) return undefined;
  const owners = trustedOwners(uid, home);
  const file = entryOf(path, true);
  if (file === undefined) return undefined;
  if (!owners.has(file.uid)) return `${path} belongs to uid ${file.uid}`;
  const seen = new Set<string>();
  for (const start of wayUp(path)) {
    for (let dir = dirname(start); !seen.has(dir); dir = dirname(dir)) {
      seen.add(dir);
      const why = reachOfOthers(dir, owners);
      if (why !== undefined) return why;
      if (dirname(dir) === dir) break;
    }
  }
  return undefined;
}

/**
 * The paths to walk up from for `dir`: itself and, when a link lies on its way, where it really is.
 * A link's target sits under other folders than the link's, and whoever may rename an entry there
 * reaches the records as surely (`~/.local/state/mcpmgr -> /srv/open/state`, /srv/open writable by all).
 */
function wayUp(dir: string): string[] {
  let existing = dir;
  while (entryOf(existing, false) === undefined && dirname(existing) !== existing) existing = dirname(existing);
  let real: string;
  try {
    real = realpathSync(existing);
  } catch {
    return [dir];
  }
  return real === existing ? [dir] : [dir, real];
}
