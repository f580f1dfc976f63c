/**
 * `--enable-audit` / `--audit-config FILE` (JSON or YAML, docs/file-formats.md):
 *   {"enabled":true,"component":"...","eventTypes":[...],"excludeEventTypes":[...],
 *    "includeRequestData":false,"includeResponseData":false,"maxDataSize":1024,"logFile":"..."}
 */
import * as v from "valibot";
import { decodeConfigFile } from "./config-file.ts";

export const AUDIT_EVENT_TYPES = [
  "mcp_initialize",
  "mcp_tool_call",
  "mcp_tools_list",
  "mcp_prompt_get",
  "mcp_prompts_list",
  "mcp_resource_read",
  "mcp_resources_list",
  "mcp_ping",
  "mcp_notification",
  "mcp_request",
  "mcp_stream_open",
  "mcp_session_end",
] as const;
export type AuditEventType = (typeof AUDIT_EVENT_TYPES)[number];

export interface AuditConfig {
  readonly component: string;
  /** undefined: every type. */
  readonly eventTypes: ReadonlySet<AuditEventType> | undefined;
  readonly excludeEventTypes: ReadonlySet<AuditEventType>;
  readonly includeRequestData: boolean;
  readonly includeResponseData: boolean;
  readonly maxDataSize: number;
  readonly logFile: string | undefined;
}

const eventType = v.picklist(AUDIT_EVENT_TYPES, `must be one of ${AUDIT_EVENT_TYPES.join(", ")}`);
const fileSchema = v.strictObject({
  enabled: v.optional(v.boolean(), true),
  component: v.optional(v.pipe(v.string(), v.nonEmpty("must not be empty"))),
  eventTypes: v.optional(v.array(eventType)),
  excludeEventTypes: v.optional(v.array(eventType), () => []),
  includeRequestData: v.optional(v.boolean(), false),
  includeResponseData: v.optional(v.boolean(), false),
  maxDataSize: v.optional(
    v.pipe(
      v.number(),
      v.integer("must be a whole number"),
      v.minValue(0, "must not be negative"),
      v.maxValue(1_048_576, "must be at most 1 MiB"),
    ),
    1024,
  ),
  logFile: v.optional(v.pipe(v.string(), v.nonEmpty("must not be empty"))),
});

/** undefined: no auditing (neither option given, or the file says enabled: false). */
export function auditConfig(
  enable: boolean,
  path: string | undefined,
  defaultComponent: string,
): AuditConfig | undefined {
  if (!enable && path === undefined) return undefined;
  const file =
    path === undefined
      ? v.parse(fileSchema, {})
      : decodeConfigFile(path, fileSchema, {
          option: "--audit-config",
          yaml: true,
          hint: 'e.g. {"eventTypes": ["mcp_tool_call"], "includeRequestData": true}',
        });
  if (!file.enabled) return undefined;
  return Object.freeze({
    component: file.component ?? defaultComponent,
    eventTypes: file.eventTypes ? new Set(file.eventTypes) : undefined,
    excludeEventTypes: new Set(file.excludeEventTypes),
    includeRequestData: file.includeRequestData,
    includeResponseData: file.includeResponseData,
    maxDataSize: file.maxDataSize,
    logFile: file.logFile,
  });
}
