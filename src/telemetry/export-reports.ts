/**
 * Where a workload's OTLP exports go, and what its log says when they fail: the SDK reports export
 * errors only to its diagnostic logger, which nothing reads, so a collector that is down, a wrong
 * port or path, or a refused key lost every span and metric without a word.
 */

/**
 * The URL of one signal: `/v1/traces` or `/v1/metrics` added to the endpoint's path (or put in place
 * of the other signal's), its query kept as a query (a collector key given as `?api-key=…`).
 */
export function signalUrl(endpoint: URL, signal: "traces" | "metrics"): string {
  const url = new URL(endpoint.href);
  url.hash = "";
  url.pathname = /\/v1\/(traces|metrics)$/.test(url.pathname)
    ? url.pathname.replace(/\/v1\/(traces|metrics)$/, `/v1/${signal}`)
    : `${url.pathname.replace(/\/+$/, "")}/v1/${signal}`;
  return url.href;
}

/** A collector URL as the log shows it: without its query, which may hold the collector's key. */
export function shownUrl(url: string): string {
  const parsed = new URL(url);
  const query = parsed.search === "" ? "" : "?…";
  parsed.search = "";
  parsed.username = "";
  parsed.password = "";
  return `${parsed.href}${query}`;
}

/** What an exporter hands its callback: code 0 succeeded, anything else failed (with the error). */
interface ExportOutcome {
  code: number;
  error?: Error;
}

/**
 * A collector that flaps (one bad instance of two behind a balancer) would otherwise write a warning
 * and a recovery every few exports, for as long as it lasts: after a warning, the next one waits this long.
 */
export const QUIET_MS = 10 * 60_000;

/**
 * Has `exporter` say in the workload's log when its exports start failing, and when they reach the
 * collector again: once per change of state, not per export (metrics go every 5 s), and, within
 * QUIET_MS of the last warning, nothing (the failures in between are counted into the next warning).
 */
export function reportFailures<T extends { export(items: never, done: (outcome: ExportOutcome) => void): void }>(
  exporter: T,
  what: string,
  url: string,
  say: ((text: string) => void) | undefined,
  now: () => number = Date.now,
): T {
  if (say === undefined) return exporter;
  const shown = shownUrl(url);
  let failing = false;
  let announced = false;
  let lastWarning = Number.NEGATIVE_INFINITY;
  let unsaid = 0;
  const exportItems = exporter.export.bind(exporter) as (
    items: unknown,
    done: (outcome: ExportOutcome) => void,
  ) => void;
  (exporter as { export: unknown }).export = (items: unknown, done: (outcome: ExportOutcome) => void) =>
    exportItems(items, (outcome) => {
      if (outcome.code !== 0) {
        if (!failing) unsaid++;
        failing = true;
        if (!announced && now() - lastWarning >= QUIET_MS) {
          announced = true;
          lastWarning = now();
          // The error may quote the URL it tried, query and all.
          const message = (outcome.error?.message ?? "").split(url).join(shown);
          const reason = message.split("\n")[0]?.slice(0, 300) || "the export failed";
          const before = unsaid > 1 ? ` (${unsaid - 1} earlier failing spells not logged)` : "";
          unsaid = 0;
          say(
            `telemetry: ${what} could not be sent to ${shown}: ${reason}; they are dropped until it answers${before}`,
          );
        }
      } else if (failing) {
        failing = false;
        if (announced) say(`telemetry: ${what} reach ${shown} again`);
        announced = false;
      }
      done(outcome);
    });
  return exporter;
}
