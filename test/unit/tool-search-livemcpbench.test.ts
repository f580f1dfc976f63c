/**
 * The one dataset check outside the bench: LiveMCPBench's 527 real tools load into the index as 527
 * distinct gateway tools (17 names occur in two servers), and our search beats the plain BM25 baseline
 * on the README's measure. The figures themselves are the bench's job (bench/tool-search.ts). Fails, not
 * skips, when the data is missing: set MCPMGR_LIVEMCPBENCH_DIR.
 */
import { expect, test } from "bun:test";
import { ToolSearchIndex } from "../../src/gateway/tool-search/tool-index.ts";
import { PlainBm25 } from "../../bench/lib/plain-bm25.ts";
import { loadLiveMcpBench, scoreRecall } from "../support/livemcpbench.ts";

test("LiveMCPBench: 527 distinct gateway tools, and better recall than plain BM25", () => {
  const data = loadLiveMcpBench();
  const index = new ToolSearchIndex();
  for (const server of data.servers) index.upsertWorkload(server.workload, server.description, server.tools);
  const toolNames = data.servers.flatMap((server) => server.tools.map((tool) => tool.name));
  expect(toolNames).toHaveLength(527);
  expect(toolNames.length - new Set(toolNames).size).toBe(17);
  expect(index.toolCount).toBe(527);
  expect(data.tasks).toHaveLength(94);

  const ours = scoreRecall(data.tasks, (query, limit) => index.search(query, { limit }).map((hit) => hit.tool.name));
  const baseline = new PlainBm25(data.servers);
  const plain = scoreRecall(data.tasks, (query, limit) => baseline.search(query, limit));
  expect(plain.stepRecallAt5).toBeCloseTo(0.692, 3); // the README's reference figure
  expect(ours.stepRecallAt5).toBeGreaterThan(plain.stepRecallAt5);
  expect(ours.taskRecallAt10).toBeGreaterThan(plain.taskRecallAt10);
});
