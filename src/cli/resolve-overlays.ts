/** `mcpmgr __resolve-overlays` (hidden): a supervisor's ignore-overlay walk, apart (workload/overlay-walk.ts). */
import { defineCommand } from "citty";
import { answerWalkRequest } from "../workload/overlay-walk.ts";

export default defineCommand({
  meta: { name: "__resolve-overlays", description: "internal: walk mounts for ignore overlays", hidden: true },
  async run() {
    const { reply, refused } = await answerWalkRequest(await Bun.stdin.text());
    await Bun.write(Bun.stdout, reply);
    // Another version's supervisor asked (see overlay-walk.ts): said where an older one quotes it, and exit 1.
    if (refused !== undefined) {
      process.stderr.write(`${refused}\n`);
      process.exitCode = 1;
    }
  },
});
