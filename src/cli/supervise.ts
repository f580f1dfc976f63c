/** `mcpmgr __supervise NAME` (hidden): the detached process behind a workload (workload/supervisor.ts). */
import { defineCommand } from "citty";
import { errorMessage, McpmgrError } from "../errors.ts";
import { supervise } from "../workload/supervisor.ts";
import { cliContext } from "./context.ts";
import { log } from "./output.ts";
import { untilSignal } from "./signals.ts";

export default defineCommand({
  meta: { name: "__supervise", description: "internal: serve a detached workload", hidden: true },
  async run({ rawArgs }) {
    const name = rawArgs[0];
    if (name === undefined)
      throw new McpmgrError("INVALID_ARGUMENT", "__supervise needs a workload name", {
        hint: "this command is internal to mcpmgr",
      });
    try {
      await supervise(name, cliContext(), untilSignal());
    } catch (err) {
      // Recorded in the status file for `run` to report; the proxy log gets the reason alone.
      log.error(errorMessage(err));
      process.exit(1);
    }
  },
});
