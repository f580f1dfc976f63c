/**
 * `mcpmgr rm NAME`: stops the workload if needed and removes its record, logs and AI-client
 * entries. The OAuth login of a remote stays (other workloads of the remote share it): rm says
 * which `oauth-` secrets hold it and how to forget them.
 */
import { defineCommand } from "citty";
import { resolvePaths } from "../state/paths.ts";
import { removeRecorded } from "../workload/lifecycle.ts";
import { toCittyArgs, withExamples } from "./citty-args.ts";
import { log } from "./output.ts";
import { parseNamed } from "./workload-arg.ts";

const rmCommand = defineCommand({
  meta: { name: "rm", description: "Remove a workload (stopping it first)" },
  args: toCittyArgs({}, { NAME: { description: "Workload name", required: true, completes: "workloads" } }),
  async run({ rawArgs }) {
    const { name } = parseNamed(rawArgs, {}, "rm");
    const paths = resolvePaths();
    const env = process.env;
    const record = await removeRecorded(name, { log, paths, env });
    log.info(`removed ${name}`);
    // Only a remote logs in with OAuth: the secrets store and the run options' parser are loaded for one alone.
    if (record?.runtime !== "remote") return;
    const [{ keptLoginsLine }, { createSecretManager }] = await Promise.all([
      import("../workload/kept-logins.ts"),
      import("../secrets/manager.ts"),
    ]);
    const kept = await keptLoginsLine(record, {
      env,
      paths,
      secrets: () => createSecretManager({ dir: paths.dataDir, env }),
    });
    if (kept !== undefined) log.info(kept);
  },
});

export default withExamples(rmCommand, [
  { description: "Stop the workload 'fetch' and forget it", command: "mcpmgr rm fetch" },
  { description: "Remove a background gateway", command: "mcpmgr rm gateway-work" },
]);
