import { expect, test } from "bun:test";
import { attributedLog, GATEWAY_LOGGER } from "../../src/gateway/member-log.ts";

test("a workload's log line names the workload first, whatever logger it claims", () => {
  expect(attributedLog("notes", { level: "info", logger: GATEWAY_LOGGER, data: "x" })).toEqual({
    level: "info",
    logger: "notes/mcpmgr-gateway",
    data: "x",
  });
  expect(attributedLog("notes", { level: "info", logger: "other/db", data: 1 }).logger).toBe("notes/other/db");
  expect(attributedLog("notes", { level: "info", data: 1 }).logger).toBe("notes");
  expect(attributedLog("notes", { level: "info", logger: "", data: 1 }).logger).toBe("notes");
  expect(attributedLog("notes", { level: "info", logger: 7, data: 1 }).logger).toBe("notes");
});

test("a workload named like the gateway's logger never speaks as the gateway", () => {
  expect(attributedLog(GATEWAY_LOGGER, { level: "warning", data: "x" }).logger).toBe("mcpmgr-gateway/");
  expect(attributedLog(GATEWAY_LOGGER, { level: "warning", logger: "y", data: "x" }).logger).toBe("mcpmgr-gateway/y");
});

test("a workload's logger cannot act on the client's terminal or start a line of its own", () => {
  // A carriage return and an erase-line sequence would leave "mcpmgr-gateway" on screen without "notes/".
  expect(attributedLog("notes", { level: "warning", logger: "\r\u001b[2Kmcpmgr-gateway", data: "x" }).logger).toBe(
    "notes/\\x0d\\x1b[2Kmcpmgr-gateway",
  );
  expect(attributedLog("notes", { level: "warning", logger: "db\n[warning] mcpmgr-gateway", data: "x" }).logger).toBe(
    "notes/db\\n[warning] mcpmgr-gateway",
  );
  expect(attributedLog("notes", { level: "info", logger: "\u202eyawetag", data: "x" }).logger).toBe(
    "notes/\\u202eyawetag",
  );
  const long = attributedLog("notes", { level: "info", logger: "a".repeat(100_000), data: "x" }).logger as string;
  expect(long.length).toBeLessThanOrEqual("notes/".length + 129);
  // Legitimate loggers are unchanged, in any script.
  expect(attributedLog("notes", { level: "info", logger: "http.server", data: "x" }).logger).toBe("notes/http.server");
  expect(attributedLog("notes", { level: "info", logger: "データベース", data: "x" }).logger).toBe(
    "notes/データベース",
  );
});
