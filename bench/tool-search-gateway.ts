/**
 * Tool search through the real gateway (`TOOL_SEARCH_GATEWAY=1 bun run bench:tool-search`): LiveMCPBench's
 * 70 servers behind `mcpmgr gateway GROUP --tool-search`, queried with the SDK client over HTTP.
 *
 * How the 527 tools are served cheaply: one process of the tools.json fixture serves every server on its
 * own path (`test/fixtures/tools-json-server.ts TOOLS_JSON --http`), and each server is a remote workload
 * (`mcpmgr run http://…/s/KEY/mcp --name WORKLOAD --group livemcpbench`): 70 supervisors (~85 MB each from
 * source), no 70 stdio servers. The workloads keep the dataset's names, so the gateway names tools as the
 * in-process measure does (`<workload>_<tool>`; the 17 names shared by two servers stay distinct).
 *
 * Measured: recall (the same measure as in process, every query a find_tool call), tokens of tools/list
 * in search mode and of a second gateway without it, find_tool answers, find_tool latency through the
 * endpoint, and how long a workload that joins takes to become findable.
 */
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join, resolve } from "node:path";
import { Client } from "@modelcontextprotocol/sdk/client/index.js";
import { StreamableHTTPClientTransport } from "@modelcontextprotocol/sdk/client/streamableHttp.js";
import type { CallToolResult } from "@modelcontextprotocol/sdk/types.js";
import { type LiveMcpBench, scoreRecall, type DatasetTask, type RecallScores } from "../test/support/livemcpbench.ts";
import { spawnUntil, type Running } from "../test/support/processes.ts";

const root = resolve(import.meta.dir, "..");
const GROUP = "livemcpbench";
const PARALLEL_RUNS = 4;

export interface GatewayFigures {
  readonly workloads: number;
  readonly tools: number;
  readonly all: RecallScores;
  readonly halves: [RecallScores, RecallScores];
  /** Characters of the tools/list result as the client receives it (JSON). */
  readonly searchList: number;
  readonly fullList: number;
  readonly fullListTools: number;
  readonly instructions: number;
  /** Characters of each 5-result find_tool answer's text, sorted. */
  readonly answerText: number[];
  /** find_tool round trips through the endpoint, ms, sorted. */
  readonly latency: number[];
  /** From `mcpmgr run` returning to the new workload's tool being found, ms. */
  readonly joinToFindable: number;
  /** How long that `mcpmgr run` took (process start, supervisor, the workload answering), ms. */
  readonly runMs: number;
  readonly startSeconds: number;
}

function mcpmgrCommand(): string[] {
  return process.env.TOOL_SEARCH_MCPMGR?.trim().split(/\s+/) ?? [process.execPath, join(root, "src/main.ts")];
}

async function mcpmgr(env: Record<string, string>, ...args: string[]): Promise<string> {
  const proc = Bun.spawn([...mcpmgrCommand(), ...args], {
    cwd: root,
    env: { ...process.env, ...env, NO_COLOR: "1" },
    stdout: "pipe",
    stderr: "pipe",
  });
  const [stdout, stderr, code] = await Promise.all([
    new Response(proc.stdout).text(),
    new Response(proc.stderr).text(),
    proc.exited,
  ]);
  if (code !== 0) throw new Error(`mcpmgr ${args.join(" ")} failed (${code}):\n${stderr}`);
  return stdout;
}

/** Runs `jobs` with at most `limit` at once. */
async function inBatches<T>(items: readonly T[], limit: number, job: (item: T) => Promise<unknown>): Promise<void> {
  const queue = [...items];
  await Promise.all(
    Array.from({ length: limit }, async () => {
      for (let item = queue.shift(); item !== undefined; item = queue.shift()) await job(item);
    }),
  );
}

const toolNameOf = (gatewayName: string) => gatewayName.slice(gatewayName.indexOf("_") + 1);
const sorted = (values: number[]) => [...values].sort((a, b) => a - b);

async function findTool(client: Client, query: string, limit: number): Promise<CallToolResult> {
  return (await client.callTool({ name: "find_tool", arguments: { query, limit } })) as CallToolResult;
}

export async function measureThroughGateway(
  data: LiveMcpBench,
  halves: [DatasetTask[], DatasetTask[]],
  log: (line: string) => void,
): Promise<GatewayFigures> {
  const started = performance.now();
  const home = mkdtempSync(join(tmpdir(), "mcpmgr-tool-search-bench-"));
  const env = { MCPMGR_HOME: home, MCPMGR_RUNTIME: "process" };
  const running: Running[] = [];
  const names: string[] = [];
  try {
    const fixture = await spawnUntil(
      [process.execPath, join(root, "test/fixtures/tools-json-server.ts"), join(data.dir, "tools.json"), "--http"],
      /^READY (\S+)$/m,
    );
    running.push(fixture);
    const base = fixture.match[1] as string;
    await mcpmgr(env, "group", "create", GROUP);
    // The dataset's server keys and the workload names the in-process measure gives them.
    const servers = data.servers.map((server) => ({ workload: server.workload, key: server.key }));
    log(`starting ${servers.length} remote workloads of the fixture (${PARALLEL_RUNS} at a time)`);
    await inBatches(servers, PARALLEL_RUNS, async ({ workload, key }) => {
      await mcpmgr(env, "run", `${base}/s/${encodeURIComponent(key)}/mcp`, "--name", workload, "--group", GROUP);
      names.push(workload);
    });
    const gateway = await spawnUntil([...mcpmgrCommand(), "gateway", GROUP, "--tool-search"], /^(http:\/\/\S+)$/m, {
      env,
      timeoutMs: 60_000,
    });
    running.push(gateway);
    const plain = await spawnUntil([...mcpmgrCommand(), "gateway", GROUP], /^(http:\/\/\S+)$/m, {
      env,
      timeoutMs: 60_000,
    });
    running.push(plain);
    const startSeconds = (performance.now() - started) / 1000;

    const client = new Client({ name: "tool-search-bench", version: "1.0.0" });
    await client.connect(new StreamableHTTPClientTransport(new URL(gateway.match[1] as string)));
    const plainClient = new Client({ name: "tool-search-bench-plain", version: "1.0.0" });
    await plainClient.connect(new StreamableHTTPClientTransport(new URL(plain.match[1] as string)));
    try {
      const searchList = JSON.stringify(await client.listTools()).length;
      const full = await plainClient.listTools();
      const fullList = JSON.stringify(full).length;
      const instructions = client.getInstructions()?.length ?? 0;

      // Every query once through find_tool (the recall measure is synchronous: answers are fetched first).
      log("recall: every step and question through find_tool");
      const answers = new Map<string, string[]>();
      for (const task of data.tasks) {
        for (const [query, limit] of [...task.steps.map((step) => [step, 5] as const), [task.question, 10] as const]) {
          const result = await findTool(client, query, limit);
          const tools = (result.structuredContent as { tools: { name: string }[] }).tools;
          answers.set(
            `${limit} ${query}`,
            tools.map((tool) => toolNameOf(tool.name)),
          );
        }
      }
      const search = (query: string, limit: number) => answers.get(`${limit} ${query}`) ?? [];

      log("latency: find_tool round trips");
      const queries = data.tasks.flatMap((task) => [...task.steps, task.question]);
      const rounds = Number(process.env.TOOL_SEARCH_GATEWAY_ROUNDS ?? 3);
      const latency: number[] = [];
      const answerText: number[] = [];
      for (let round = 0; round < rounds; round++) {
        for (const query of queries) {
          const t0 = performance.now();
          const result = await findTool(client, query, 5);
          latency.push(performance.now() - t0);
          // Every step and question at 5 results, as the in-process measure counts them.
          if (round === 0) answerText.push((result.content[0] as { text: string }).text.length);
        }
      }

      // A workload that joins: one more copy of a server under a new name, polled for until found.
      log("a workload joining");
      const probe = data.servers[0];
      let joinToFindable = Number.NaN;
      let runMs = Number.NaN;
      if (probe?.tools[0]) {
        const run0 = performance.now();
        await mcpmgr(
          env,
          "run",
          `${base}/s/${encodeURIComponent(probe.key)}/mcp`,
          "--name",
          "joiner",
          "--group",
          GROUP,
        );
        names.push("joiner");
        const t0 = performance.now();
        runMs = t0 - run0;
        const wanted = `joiner_${probe.tools[0].name}`;
        while (performance.now() - t0 < 30_000) {
          const result = await findTool(client, probe.tools[0].description || probe.tools[0].name, 20);
          if ((result.structuredContent as { tools: { name: string }[] }).tools.some((t) => t.name === wanted)) {
            joinToFindable = performance.now() - t0;
            break;
          }
          await Bun.sleep(10);
        }
      }

      return {
        workloads: servers.length,
        tools: full.tools.length,
        all: scoreRecall(data.tasks, search),
        halves: [scoreRecall(halves[0], search), scoreRecall(halves[1], search)],
        searchList,
        fullList,
        fullListTools: full.tools.length,
        instructions,
        answerText: sorted(answerText),
        latency: sorted(latency),
        joinToFindable,
        runMs,
        startSeconds,
      };
    } finally {
      await Promise.allSettled([client.close(), plainClient.close()]);
    }
  } finally {
    for (const process of running.slice(1).reverse()) await process.stop();
    await inBatches(names, PARALLEL_RUNS, (name) => mcpmgr(env, "rm", name).catch(() => undefined));
    await running[0]?.stop();
    rmSync(home, { recursive: true, force: true });
  }
}

const pct = (x: number) => `${(x * 100).toFixed(1)}%`;
const tokens = (chars: number) => Math.round(chars / 4);
const quantile = (values: readonly number[], q: number) =>
  values[Math.min(values.length - 1, Math.floor(values.length * q))] as number;

/** The `tool-search-gateway` section of bench/RESULTS.md. */
export function gatewaySection(figures: GatewayFigures, inProcess: RecallScores, inProcessP50: number): string {
  const verdict = (ok: boolean) => (ok ? "met" : "**missed**");
  const same =
    figures.all.stepRecallAt5 === inProcess.stepRecallAt5 && figures.all.taskRecallAt10 === inProcess.taskRecallAt10;
  return [
    "### Through the gateway",
    "",
    `Written by \`TOOL_SEARCH_GATEWAY=1 bun run bench:tool-search\` on ${new Date().toISOString().slice(0, 19).replace("T", " ")} UTC. The ${figures.workloads} servers are remote workloads (\`mcpmgr run http://…/s/KEY/mcp\`) of one process of the tools.json fixture (\`test/fixtures/tools-json-server.ts --http\`), which lists each server's tools exactly as tools.json has them and echoes calls; \`mcpmgr gateway livemcpbench --tool-search\` in front, and the SDK client (streamable HTTP, 2025-era session) calling \`find_tool\` for every query. Starting the fixture, the ${figures.workloads} workloads and two gateways took ${figures.startSeconds.toFixed(0)} s.`,
    "",
    "| what | through the gateway | target |",
    "| --- | ---: | --- |",
    `| per-step set-recall@5 (all ${figures.all.perTask.length} tasks; half A / half B) | ${pct(figures.all.stepRecallAt5)} (${pct(figures.halves[0].stepRecallAt5)} / ${pct(figures.halves[1].stepRecallAt5)}) | ≥ 80%: ${verdict(figures.all.stepRecallAt5 >= 0.8)} |`,
    `| task recall@10 | ${pct(figures.all.taskRecallAt10)} | – |`,
    `| the same as in process | ${same ? "yes, to the last task" : `**no**: in process ${pct(inProcess.stepRecallAt5)} / ${pct(inProcess.taskRecallAt10)}`} | – |`,
    `| \`tools/list\` in search mode, as received (JSON) | ${tokens(figures.searchList)} tokens | – |`,
    `| server instructions in search mode, as received | ${tokens(figures.instructions)} tokens | – |`,
    `| **\`tools/list\` + instructions** | ${tokens(figures.searchList + figures.instructions)} tokens | ≤ 600: ${verdict(tokens(figures.searchList + figures.instructions) <= 600)} |`,
    `| \`tools/list\` of the same gateway without \`--tool-search\` (${figures.fullListTools} tools) | ${tokens(figures.fullList)} tokens | about 100,000 |`,
    `| **find_tool answer, 5 results, text: median / p95 / max** | ${tokens(quantile(figures.answerText, 0.5))} / ${tokens(quantile(figures.answerText, 0.95))} / ${tokens(figures.answerText.at(-1) ?? 0)} tokens | ≤ 1,500: ${verdict(tokens(figures.answerText.at(-1) ?? 0) <= 1500)} (max) |`,
    `| find_tool round trip through the endpoint, ${figures.latency.length} calls: p50 / p99 | ${quantile(figures.latency, 0.5).toFixed(2)} / ${quantile(figures.latency, 0.99).toFixed(2)} ms | in process p50 ${inProcessP50.toFixed(3)} ms (≤ 2 ms: ${verdict(inProcessP50 <= 2)}) |`,
    `| a workload joining: its tool found after \`mcpmgr run\` returned (the run itself took ${figures.runMs.toFixed(0)} ms) | ${Number.isNaN(figures.joinToFindable) ? "**not found in 30 s**" : `${figures.joinToFindable.toFixed(0)} ms`} | – |`,
    "",
    "The round trip is the SDK client's `callTool` over HTTP to the gateway and back (session, policy chain, JSON-RPC both ways); the search itself is the in-process figure above. Joining includes the gateway noticing the workload in the store (a file watch), connecting to it, listing its tools and re-indexing it, which mostly happens while `mcpmgr run` is still waiting for the workload to answer (a few ms after it returns means: found at the first query); the re-index alone is the one-workload rebuild above.",
  ].join("\n");
}
