/** `mcpmgr export NAME PATH`: the workload's configuration, for `run --from-config PATH`. */
import { defineCommand } from "citty";
import { shellWord } from "../printable.ts";
import { isValidWorkloadName } from "../state/workload-name.ts";
import { toCittyArgs, withExamples } from "./citty-args.ts";
import { log, writeStdout } from "./output.ts";
import { openStore, parseNamed } from "./workload-arg.ts";

const exportCommand = defineCommand({
  meta: { name: "export", description: "Write a workload's configuration to a file" },
  args: toCittyArgs(
    {},
    {
      NAME: { description: "Workload name", required: true, completes: "workloads" },
      PATH: { description: "File to write (- for stdout)", required: true, completes: "files" },
    },
  ),
  async run({ rawArgs }) {
    const { name, rest } = parseNamed(rawArgs, {}, "export", { extra: 1 });
    const path = rest[0];
    if (path === undefined) {
      const { McpmgrError } = await import("../errors.ts");
      throw new McpmgrError("MISSING_OPTION", "missing the PATH to write", {
        hint: `usage: mcpmgr export ${isValidWorkloadName(name) ? name : "NAME"} PATH`,
      });
    }
    const record = await openStore().getExisting(name);
    const { exportedText, writeExported } = await import("../workload/exported-config.ts");
    // A reader gone (EPIPE) is no error; a failed write (ENOSPC) is OUTPUT_FAILED.
    if (path === "-") return void writeStdout(exportedText(record));
    await writeExported(path, record);
    log.info(`wrote ${name}'s configuration to ${path} (run it with 'mcpmgr run --from-config ${shellWord(path)}')`);
  },
});

export default withExamples(exportCommand, [
  { description: "Save the configuration of 'fetch' to a file", command: "mcpmgr export fetch fetch.json" },
  { description: "Run it again from that file, here or elsewhere", command: "mcpmgr run --from-config fetch.json" },
]);
