/**
 * The OTLP signal URLs, and the log lines about failing exports: once per change of state, quiet for a
 * while after a warning (a flapping collector), and never the collector's key from the URL's query.
 */
import { expect, test } from "bun:test";
import { QUIET_MS, reportFailures, signalUrl } from "../../src/telemetry/export-reports.ts";

test("the signal's path goes on the path, the query stays a query", () => {
  expect(signalUrl(new URL("https://c.example:4318"), "traces")).toBe("https://c.example:4318/v1/traces");
  expect(signalUrl(new URL("https://c.example/otlp/"), "metrics")).toBe("https://c.example/otlp/v1/metrics");
  expect(signalUrl(new URL("https://c.example/otlp?api-key=k3y"), "metrics")).toBe(
    "https://c.example/otlp/v1/metrics?api-key=k3y",
  );
  expect(signalUrl(new URL("https://c.example/v1/traces?api-key=k3y"), "metrics")).toBe(
    "https://c.example/v1/metrics?api-key=k3y",
  );
});

/** An exporter whose outcome each test sets: reportFailures only wraps its export(). */
function exporterAnswering() {
  const state = { code: 0 };
  const exporter = {
    export(_items: never, done: (outcome: { code: number; error?: Error }) => void) {
      done(state.code === 0 ? { code: 0 } : { code: 1, error: new Error(`404 from ${URL_WITH_KEY}`) });
    },
  };
  return { state, exporter };
}

const URL_WITH_KEY = "https://c.example/v1/metrics?api-key=k3y-s3cret";

test("a flapping collector is warned about once per quiet period; the URL's query is not logged", () => {
  let clock = 0;
  const lines: string[] = [];
  const { state, exporter } = exporterAnswering();
  reportFailures(
    exporter,
    "metrics",
    URL_WITH_KEY,
    (text) => lines.push(text),
    () => clock,
  );
  const send = (code: number) => {
    state.code = code;
    clock += 5_000;
    exporter.export(undefined as never, () => {});
  };
  send(1);
  send(1);
  send(0);
  expect(lines).toHaveLength(2);
  expect(lines[0]).toContain("metrics could not be sent to https://c.example/v1/metrics?…");
  expect(lines[1]).toContain("metrics reach https://c.example/v1/metrics?… again");
  // An hour of fail, succeed, fail, succeed: quiet until QUIET_MS after the warning.
  for (let i = 0; i < 720; i++) send(i % 2 === 0 ? 1 : 0);
  expect(lines.length).toBeLessThanOrEqual(2 + 2 * Math.ceil(3_600_000 / QUIET_MS));
  expect(lines.some((line) => /\d+ earlier failing spells not logged/.test(line))).toBe(true);
  expect(lines.join("\n")).not.toContain("k3y-s3cret");
});

test("an outage that begins in the quiet period is warned about when the period ends", () => {
  let clock = 0;
  const lines: string[] = [];
  const { state, exporter } = exporterAnswering();
  reportFailures(
    exporter,
    "spans",
    URL_WITH_KEY,
    (text) => lines.push(text),
    () => clock,
  );
  const send = (code: number) => {
    state.code = code;
    exporter.export(undefined as never, () => {});
  };
  send(1);
  send(0);
  expect(lines).toHaveLength(2);
  clock = 60_000;
  send(1);
  expect(lines).toHaveLength(2);
  clock = QUIET_MS;
  send(1);
  expect(lines).toHaveLength(3);
  expect(lines[2]).toContain("spans could not be sent");
  send(0);
  expect(lines[3]).toContain("spans reach");
});
