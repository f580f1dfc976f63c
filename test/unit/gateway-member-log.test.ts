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
