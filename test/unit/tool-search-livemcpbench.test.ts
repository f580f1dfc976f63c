/**
 * The one dataset check outside the bench: LiveMCPBench's 527 real tools load into the index as 527
 * distinct gateway tools (17 names occur in two servers), and our search beats the plain BM25 baseline
 * on the README's measure; and the token budgets hold on these real tools (a budget is a
 * requirement, not a timing). The figures themselves are the bench's job (bench/tool-search.ts). Fails,
 * not skips, when the data is missing: set MCPMGR_LIVEMCPBENCH_DIR.
 */
import { expect, test, setDefaultTimeout } from "bun:test";
import { renderFindAnswer } from "../../src/gateway/tool-search/find-answer.ts";
import { searchModeInstructions } from "../../src/gateway/tool-search/instructions.ts";
import { searchModeTools } from "../../src/gateway/tool-search/search-tools.ts";
import { ToolSearchIndex } from "../../src/gateway/tool-search/tool-index.ts";
import { PlainBm25 } from "../../bench/lib/plain-bm25.ts";
import { loadLiveMcpBench, scoreRecall } from "../support/livemcpbench.ts";

// Real processes and servers: more than bun's 5 s on a loaded machine (the preload's default
// reaches only the first file of a run).
setDefaultTimeout(60_000);

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

/** Characters per token, the measure. */
const CHARS_PER_TOKEN = 4;

test("LiveMCPBench: search mode's tools/list with the instructions stays within 600 tokens, a 5-result find_tool answer within 1,500", () => {
  const data = loadLiveMcpBench();
  const index = new ToolSearchIndex();
  for (const server of data.servers) index.upsertWorkload(server.workload, server.description, server.tools);

  // What a client reads before the user says anything: the two tools and the server's instructions.
  const listed = JSON.stringify({ tools: searchModeTools }).length + searchModeInstructions(index.workloads()).length;
  expect(listed / CHARS_PER_TOKEN).toBeLessThanOrEqual(600);
  // The instructions still name every one of the 70 workloads.
  const instructions = searchModeInstructions(index.workloads());
  for (const server of data.servers) expect(instructions).toContain(server.workload);

  // Every 5-result answer to the dataset's steps and questions, and the 5 tools with the largest schemas.
  const answers = data.tasks.flatMap((task) =>
    [...task.steps, task.question].map((query) => renderFindAnswer(query, index.search(query, { limit: 5 }))),
  );
  const largest = index
    .tools()
    .sort((a, b) => JSON.stringify(b.tool.inputSchema).length - JSON.stringify(a.tool.inputSchema).length)
    .slice(0, 5)
    .map((tool) => ({ ...tool, score: 1 }));
  answers.push(renderFindAnswer("the largest schemas", largest));
  const longest = Math.max(...answers.map((answer) => (answer.content[0] as { text: string }).text.length));
  expect(longest / CHARS_PER_TOKEN).toBeLessThanOrEqual(1500);
  // Only as short as it has to be: most answers are whole.
  const whole = answers.filter((answer) => !(answer.content[0] as { text: string }).text.includes("Shortened"));
  expect(whole.length / answers.length).toBeGreaterThan(0.5);
});
