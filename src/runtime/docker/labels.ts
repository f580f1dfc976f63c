/**
 * Labels on everything mcpmgr creates in the engine (containers, networks, images), so
 * `rm`, `list` and cleanup find their own objects by query instead of by remembered IDs,
 * and so `docker ps --filter label=mcpmgr=true` shows them to users.
 */
import { McpmgrError } from "../../errors.ts";

export const MANAGED_LABEL = "mcpmgr";
export const WORKLOAD_LABEL = "mcpmgr.workload";
export const ROLE_LABEL = "mcpmgr.role";
/** The installation (state/install-id.ts `installId`) that made an object: another one never touches it. */
export const INSTALL_LABEL = "mcpmgr.install";

export interface WorkloadLabelInput {
  readonly workload: string;
  /** state/install-id.ts `installId`. */
  readonly install: string;
  readonly group: string;
  readonly transport: string;
  /** The proxy port clients use. */
  readonly port: number;
  readonly role: "server" | "egress" | "network";
  readonly user: readonly { readonly key: string; readonly value: string }[];
}

/** Prefixes owned by mcpmgr or the engines; a user label there would confuse them. */
const reservedPrefixes = ["mcpmgr", "com.docker.", "io.docker.", "org.dockerproject.", "io.podman."];
const keyPattern = /^[A-Za-z0-9](?:[A-Za-z0-9._/-]{0,251}[A-Za-z0-9])?$/;

/** The user's `--label key=value` pairs, checked; every bad one is named in one error. */
export function validateUserLabels(labels: readonly { readonly key: string; readonly value: string }[]): void {
  const bad: string[] = [];
  for (const { key, value } of labels) {
    if (!keyPattern.test(key) || /[./-]{2}/.test(key))
      bad.push(`${key} (keys are letters, digits, '.', '-', '_' and '/', starting and ending with a letter or digit)`);
    else if (
      reservedPrefixes.some((prefix) => key === prefix || key.startsWith(prefix.endsWith(".") ? prefix : `${prefix}.`))
    )
      bad.push(`${key} (reserved prefix)`);
    else if (/[\0\r\n]/.test(value) || value.length > 4096)
      bad.push(`${key} (values must be one line of at most 4096 characters)`);
  }
  if (bad.length > 0) {
    throw new McpmgrError("INVALID_OPTION", `invalid --label: ${bad.join("; ")}`, {
      hint: "use key=value, e.g. --label team=search",
    });
  }
}

export function workloadLabels(input: WorkloadLabelInput): Record<string, string> {
  return {
    ...Object.fromEntries(input.user.map((label) => [label.key, label.value])),
    [MANAGED_LABEL]: "true",
    [WORKLOAD_LABEL]: input.workload,
    [INSTALL_LABEL]: input.install,
    [ROLE_LABEL]: input.role,
    "mcpmgr.group": input.group,
    "mcpmgr.transport": input.transport,
    "mcpmgr.port": String(input.port),
  };
}

/** The engine filter selecting one workload's objects (of any installation: see ownedBy). */
export function workloadFilter(workload: string): { label: string[] } {
  return { label: [`${MANAGED_LABEL}=true`, `${WORKLOAD_LABEL}=${workload}`] };
}

/**
 * Whether an object with these labels is this installation's, for this workload. Objects made
 * before installations were labelled carry no install label and count as anyone's, as then.
 */
export function ownedBy(
  labels: Readonly<Record<string, string>> | undefined,
  workload: string,
  install: string,
): boolean {
  if (labels?.[MANAGED_LABEL] !== "true" || labels[WORKLOAD_LABEL] !== workload) return false;
  const madeBy = labels[INSTALL_LABEL];
  return madeBy === undefined || madeBy === install;
}
