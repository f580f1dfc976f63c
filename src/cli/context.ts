/** The workload layer's view of this process: the terminal, the environment, mcpmgr's directories. */
import { workloadContext, type WorkloadContext } from "../workload/context.ts";
import { log, printResult } from "./output.ts";

export function cliContext(): WorkloadContext {
  return workloadContext({
    log,
    print: printResult,
    stderr: (text) => process.stderr.write(text),
    env: process.env,
    // Loaded when a remote needs credentials: the OAuth client is the heaviest part of mcpmgr.
    outgoingAuthentication: async (spec, target, name) =>
      (await import("./outgoing-auth.ts")).prepareOutgoingAuthentication(spec, target, name),
  });
}
