/** `mcpmgr __resolve-overlays` (hidden): a supervisor's ignore-overlay walk, apart (workload/overlay-walk.ts). */
import { defineCommand } from "citty";
import { answerWalkRequest } from "../workload/overlay-walk.ts";

export default defineCommand({
  meta: { name: "__resolve-overlays", description: "internal: walk mounts for ignore overlays", hidden: true },
  async run() {
    const reply = await answerWalkRequest(await Bun.stdin.text());
    await Bun.write(Bun.stdout, reply);
  },
});
