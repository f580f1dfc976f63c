/**
 * Loading `--permission-profile` (none, network, or a JSON file; format and schema in
 * config/permission-profile.ts) and what a runtime asks of a profile.
 */
import * as v from "valibot";
import {
  expandPermissions,
  permissionProfileFileSchema,
  type PermissionProfile,
} from "../config/permission-profile.ts";
import { McpmgrError } from "../errors.ts";

export type { PermissionProfile } from "../config/permission-profile.ts";

/** Whether the profile lets the server open outbound connections at all. */
export function allowsNetwork(profile: PermissionProfile): boolean {
  const outbound = profile.network.outbound;
  return (
    profile.network.mode !== "none" &&
    (outbound.insecure_allow_all || outbound.allow_host.length > 0 || outbound.allow_port.length > 0)
  );
}

/**
 * Whether a container gets no network: the profile says mode "none", or names no mode and
 * allows no outbound traffic (the built-in `none`). An explicit mode ("host", a network
 * name) is the user's choice of network and wins over empty outbound rules.
 */
export function deniesNetwork(profile: PermissionProfile): boolean {
  const mode = profile.network.mode;
  return mode === "none" || ((mode === undefined || mode === "") && !allowsNetwork(profile));
}

export async function loadPermissionProfile(nameOrPath: string): Promise<PermissionProfile> {
  if (nameOrPath === "none" || nameOrPath === "network") return expandPermissions(nameOrPath);
  const file = Bun.file(nameOrPath);
  if (!(await file.exists())) {
    throw new McpmgrError("INVALID_OPTION", `--permission-profile ${JSON.stringify(nameOrPath)}: no such file`, {
      hint: "use none, network, or the path of a JSON permission profile",
    });
  }
  let data: unknown;
  try {
    data = await file.json();
  } catch {
    throw new McpmgrError("INVALID_OPTION", `--permission-profile ${nameOrPath}: not valid JSON`, {
      hint: "check the file's syntax",
    });
  }
  const parsed = v.safeParse(permissionProfileFileSchema, data, { abortPipeEarly: true });
  if (!parsed.success) {
    const issue = parsed.issues[0];
    const path = issue?.path?.map((p) => String(p.key)).join(".") || "(root)";
    throw new McpmgrError(
      "INVALID_OPTION",
      `--permission-profile ${nameOrPath}: ${path}: ${issue?.message ?? "invalid"}`,
      {
        hint: 'expected {"read":[...],"write":[...],"network":{"outbound":{...}}}',
      },
    );
  }
  return parsed.output as PermissionProfile;
}
