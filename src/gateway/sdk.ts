/**
 * What the gateway takes from the MCP SDK v2, in one place: the gateway is the only part of
 * mcpmgr that loads it, and only when `mcpmgr gateway` runs (workload/gateway.ts imports
 * gateway/ dynamically).
 */
import type { StandardSchemaV1 } from "@modelcontextprotocol/server";
import { isObject } from "../objects.ts";

/**
 * Results pass through the gateway as the workload sent them: validating them against the
 * SDK's schemas would cost time on every call and could drop fields a newer server adds.
 */
export const anyResult: StandardSchemaV1<unknown, Record<string, unknown>> = {
  "~standard": {
    version: 1,
    vendor: "mcpmgr",
    validate: (value) => (isObject(value) ? { value } : { issues: [{ message: "a result must be an object" }] }),
  },
};

export type Params = Record<string, unknown>;
