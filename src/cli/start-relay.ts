/**
 * What a background start's supervisor says in the proxy log that the user must see where they are:
 * `run`, `start`, `restart` and `gateway --detach` show it while they wait for the workload, and what
 * it wrote up to its readiness (or its failure) once it is ready (or has failed). A remote workload's OAuth login URL (once), and a
 * background gateway's warnings about what bypasses its policies: a member that answers direct callers
 * (each such line; the gateway asks its members before it reports ready), and the AI clients registered
 * with its members directly, which those members will refuse. A remote workload's warning that its
 * credentials go over plain http:// (--remote-insecure-allow-http), said at each start, and that its
 * `--oidc-audience` names a loopback name where its clients are given the address. What a record an
 * earlier version made holds that a new `run` refuses (an inert option, a credential in plain text), and
 * a container's set-ID exposure (security.md W9): `start` and `restart` compute nothing before the
 * supervisor does, so its lines are the terminal's one copy (`run` said the set-ID one in its preflight,
 * and says it here only if it did not). Only mcpmgr's own `[warn]` lines count (a server's output in the
 * log is a debug line; a stdio server's stray stdout line quoted in a warning is not read for them). Warnings go to stderr like every log line: stdout keeps the URL alone. The log may be rotated meanwhile (state/log-files.ts): what was written since the wait began is
 * read across a rotation.
 */
import { statSync } from "node:fs";
import { LOCALHOST_AUDIENCE_MARKER } from "../config/loopback.ts";
import { PLAIN_HTTP_MARKER } from "../config/outgoing-auth-spec.ts";
import { DIRECT_CLIENTS_MARKER, UNGUARDED_MEMBER_MARKER } from "../gateway/unguarded-members.ts";
import { copyNew, type LogFiles, type LogPosition, READER_GONE } from "../state/log-files.ts";
import { LOGIN_URL_MARKER } from "../workload/oauth-callback.ts";
import { STRAY_STDOUT_QUOTE } from "../workload/server-output.ts";
import { RECORDED_OPTION_MARKER, SET_ID_EXPOSURE_MARKER } from "../workload/placement.ts";
import { RECORDED_CREDENTIAL_MARKER } from "../workload/recorded-credentials.ts";
import { log } from "./output.ts";

/** A supervisor's log line starts with its time and level (cli/output.ts), which this command's own line gives anew. */
const LOG_LINE_HEAD = /^(?:\d{4}-\d\d-\d\dT[\d:.]+Z )?\[[a-z]+\] /;

/** mcpmgr's own warning, not a server's output (logged at debug level) that quotes the words. */
const WARN_LINE_HEAD = /^(?:\d{4}-\d\d-\d\dT[\d:.]+Z )?\[warn\] /;

/** A warning line up to where it quotes a server's stray stdout line (server-output.ts), which a server words. */
function ownWords(line: string): string {
  const quote = line.indexOf(STRAY_STDOUT_QUOTE);
  return quote === -1 ? line : line.slice(0, quote);
}

/** The login prompt as the supervisor writes it (oauth-callback.ts): its info line, the URL alone on the next. */
const LOGIN_LINES = new RegExp(
  `^(?:\\d{4}-\\d\\d-\\d\\dT[\\d:.]+Z )?\\[info\\] ${LOGIN_URL_MARKER}\\n(https?:\\/\\/\\S+)\\n`,
  "m",
);

export interface StartRelay {
  /** Called every 100 ms while the command waits: shows what is new, without waiting for the read. */
  readonly whileWaiting: () => void;
  /**
   * Once the workload is ready, or its start failed (a warning written a moment before the failure may
   * not have been read yet): shows what it wrote up to then.
   */
  ready(): Promise<void>;
  /**
   * Just before the new supervisor is spawned: only what is written from here on is relayed. A `restart`
   * starts the relay before it stops the old supervisor, which (in a crash loop) may be starting its
   * server again meanwhile and log that start's warnings: they would be shown beside the new one's.
   */
  readonly fromHere: () => void;
}

export interface RelayOptions {
  /** The command said the set-ID warning already (`run`'s preflight): not again. */
  readonly setIdExposureShown?: boolean;
}

/** `prefix`: put before each line relayed (the workload's name, when several start at once). */
export function startRelay(files: LogFiles, prefix = "", options: RelayOptions = {}): StartRelay {
  const warnings = [
    UNGUARDED_MEMBER_MARKER,
    DIRECT_CLIENTS_MARKER,
    PLAIN_HTTP_MARKER,
    LOCALHOST_AUDIENCE_MARKER,
    RECORDED_OPTION_MARKER,
    RECORDED_CREDENTIAL_MARKER,
  ];
  if (!options.setIdExposureShown) warnings.push(SET_ID_EXPOSURE_MARKER);
  // Only what the new supervisor writes: an earlier run's URL or warnings are stale.
  const end = (): LogPosition => {
    const before = statSync(files.path, { throwIfNoEntry: false });
    return { ino: before?.ino, offset: before?.size ?? 0 };
  };
  let at = end();
  let text = "";
  /** Where the lines not yet looked at for warnings start in `text`. */
  let scanned = 0;
  let loginShown = false;
  let reading: Promise<void> | undefined;
  const decoder = new TextDecoder();
  const collect = async (chunk: Buffer) => {
    text += decoder.decode(chunk, { stream: true });
    return true;
  };
  const show = () => {
    if (!loginShown) {
      // The supervisor's own line, then the URL on the next: not the words anywhere in the log (a
      // server's output quoted in a warning, an indented line) followed by any URL further on.
      const url = LOGIN_LINES.exec(text)?.[1];
      if (url !== undefined) {
        loginShown = true;
        log.info(`${prefix}${LOGIN_URL_MARKER}`);
        process.stderr.write(`${url}\n`);
      }
    }
    const complete = text.lastIndexOf("\n") + 1;
    if (complete <= scanned) return;
    // Every marker only in mcpmgr's own [warn] line: a server's stderr (a debug line) or an audit record
    // quoting the words would otherwise be shown on the terminal as a warning of mcpmgr's.
    for (const line of text.slice(scanned, complete).split("\n"))
      if (WARN_LINE_HEAD.test(line) && warnings.some((marker) => ownWords(line).includes(marker))) {
        const said = line.replace(LOG_LINE_HEAD, "");
        // A line that names its workload first (`NAME: …`) is not given the name twice.
        log.warn(said.startsWith(prefix) ? said : `${prefix}${said}`);
      }
    // What was looked at is let go, but for its last line (the login prompt's first, whose URL may
    // come in the next read): a supervisor that logs a line per server's stray stdout line can write
    // hundreds of MiB while a start waits its minutes, which this command would otherwise all hold.
    const last = text.lastIndexOf("\n", complete - 2) + 1;
    text = text.slice(last);
    scanned = complete - last;
  };
  const read = () =>
    copyNew(files, at, collect)
      .then((next) => {
        if (next !== READER_GONE) at = next;
        show();
      })
      .catch(() => {});
  return {
    fromHere() {
      // Called before any read (the supervisor is not spawned yet): nothing is in flight to land after it.
      at = end();
      text = "";
      scanned = 0;
    },
    whileWaiting() {
      reading ??= read().finally(() => {
        reading = undefined;
      });
    },
    async ready() {
      await reading;
      await read();
    },
  };
}
