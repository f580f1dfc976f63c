/**
 * Permission profiles (DESIGN §7), in the shape established MCP tooling uses so
 * existing files work: built-ins `none` (no network) and `network` (outbound allowed),
 * or a JSON file.
 */
import * as v from "valibot";
import { McpmgrError } from "../errors.ts";

const stringList = v.optional(v.array(v.string()), []);

export const permissionProfileSchema = v.object({
  read: stringList,
  write: stringList,
  network: v.optional(
    v.object({
      mode: v.optional(v.string(), ""),
      outbound: v.optional(
        v.object({
          insecure_allow_all: v.optional(v.boolean(), false),
          allow_host: stringList,
          allow_port: v.optional(v.array(v.pipe(v.number(), v.integer(), v.minValue(1), v.maxValue(65535))), []),
        }),
        {},
      ),
      inbound: v.optional(v.object({ allow_host: stringList }), {}),
    }),
    {},
  ),
  privileged: v.optional(v.boolean(), false),
});

export type PermissionProfile = v.InferOutput<typeof permissionProfileSchema>;

export const builtinProfiles: Readonly<Record<"none" | "network", PermissionProfile>> = {
  none: v.parse(permissionProfileSchema, { network: { mode: "none" } }),
  network: v.parse(permissionProfileSchema, { network: { outbound: { insecure_allow_all: true } } }),
};

/** Whether the profile lets the server open outbound connections at all. */
export function allowsNetwork(profile: PermissionProfile): boolean {
  const outbound = profile.network.outbound;
  return profile.network.mode !== "none" && (outbound.insecure_allow_all || outbound.allow_host.length > 0 || outbound.allow_port.length > 0);
}

export async function loadPermissionProfile(nameOrPath: string): Promise<PermissionProfile> {
  if (nameOrPath === "none" || nameOrPath === "network") return builtinProfiles[nameOrPath];
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
    throw new McpmgrError("INVALID_OPTION", `--permission-profile ${nameOrPath}: not valid JSON`, { hint: "check the file's syntax" });
  }
  const parsed = v.safeParse(permissionProfileSchema, data, { abortPipeEarly: true });
  if (!parsed.success) {
    const issue = parsed.issues[0];
    const path = issue?.path?.map((p) => String(p.key)).join(".") ?? "(root)";
    throw new McpmgrError("INVALID_OPTION", `--permission-profile ${nameOrPath}: ${path}: ${issue?.message ?? "invalid"}`, {
      hint: 'expected {"read":[...],"write":[...],"network":{"outbound":{...}}}',
    });
  }
  return parsed.output;
}
