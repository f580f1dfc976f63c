/**
 * A remote member that holds a secret, for gateway tests of what such a member's words may carry:
 * `mcpmgr run URL` in a test group's home, forwarding a secret as its X-Api-Key header
 * (`--remote-forward-headers-secret`, the value from the environment secrets provider).
 */
import { expect } from "bun:test";
import type { TestGroup } from "./gateway-group.ts";
import { CLI_ENTRY, REPO_ROOT } from "./processes.ts";

/** Runs the remote at `url` as `name` in `groupName`, sending `value` (the secret named `ref`); the start must succeed. */
export function runSecretHeaderMember(
  group: TestGroup,
  url: string,
  name: string,
  groupName: string,
  secret: { ref: string; value: string },
): void {
  const started = Bun.spawnSync(
    [
      process.execPath,
      CLI_ENTRY,
      "run",
      url,
      "--name",
      name,
      "--group",
      groupName,
      "--remote-forward-headers-secret",
      `X-Api-Key=${secret.ref}`,
    ],
    {
      cwd: REPO_ROOT,
      env: {
        ...process.env,
        NO_COLOR: "1",
        MCPMGR_HOME: group.home,
        MCPMGR_SECRETS_PROVIDER: "environment",
        [`MCPMGR_SECRET_${secret.ref.toUpperCase()}`]: secret.value,
      },
      timeout: 120_000,
    },
  );
  expect({ code: started.exitCode, stderr: started.exitCode === 0 ? "" : started.stderr.toString() }).toEqual({
    code: 0,
    stderr: "",
  });
}
