/** Authorization config files (`--authz-config`) for tests: Cedar policies, no entities. */
import { writeFile } from "node:fs/promises";

/** Writes a `cedarv1` config holding `policies` to `path`; returns `path`. */
export async function writeCedarConfig(path: string, policies: readonly string[]): Promise<string> {
  await writeFile(path, JSON.stringify({ version: "1.0", type: "cedarv1", cedar: { policies, entities_json: "[]" } }));
  return path;
}
