/** Audit and authorization options (`run`). */
import { booleanOption, stringOption } from "../option-spec.ts";
import { nonEmpty } from "../values.ts";

export const policyOptions = {
  "enable-audit": booleanOption({
    description: "Write audit events with the default audit configuration",
    default: false,
  }),
  "audit-config": stringOption({ description: "Audit configuration file", valueHint: "path", schema: nonEmpty }),
  "authz-config": stringOption({
    description: "Authorization (Cedar) configuration file, JSON or YAML",
    valueHint: "path",
    schema: nonEmpty,
  }),
} as const;
