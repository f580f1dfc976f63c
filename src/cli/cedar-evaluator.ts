/**
 * `mcpmgr __cedar-evaluator SOCKET` (hidden): the user's one Cedar evaluator
 * (middleware/cedar-evaluator.ts), started detached by the first process with `--authz-config` that
 * finds none on SOCKET (middleware/cedar-client.ts). It exits on its own once no client is left.
 */
import { defineCommand } from "citty";
import { McpmgrError } from "../errors.ts";
import { serveEvaluator } from "../middleware/cedar-evaluator.ts";
import { log } from "./output.ts";

export default defineCommand({
  meta: { name: "__cedar-evaluator", description: "internal: decide Cedar policies for every workload", hidden: true },
  async run({ rawArgs }) {
    const socketPath = rawArgs[0];
    if (socketPath === undefined || !socketPath.startsWith("/"))
      throw new McpmgrError("INVALID_ARGUMENT", "__cedar-evaluator needs the absolute path of its socket", {
        hint: "this command is internal to mcpmgr",
      });
    const outcome = await serveEvaluator({ socketPath, log: (text) => log.info(text) });
    // After a trap the instance is not trusted: the process ends, whatever still holds it open.
    process.exit(outcome === "trapped" ? 70 : 0);
  },
});
