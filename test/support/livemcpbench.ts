/**
 * The LiveMCPBench tool data (shared/datasets/livemcpbench), read in place: it is never copied
 * into this repository. The folder is `$MCPMGR_LIVEMCPBENCH_DIR`, else `<repo>/../shared/datasets/livemcpbench`
 * (CI checks the repository out beside `shared/`). A missing folder is an error, not a skip: the bench
 * and the sanity test that need it must not pass silently without it.
 *
 * Also here: the measure its README defines (per-step set-recall@5, task recall@10), so the bench and
 * the test score every search the same way.
 */
import { existsSync, readFileSync } from "node:fs";
import { join, resolve } from "node:path";

export interface DatasetTool {
  readonly name: string;
  readonly description: string;
  readonly inputSchema: Record<string, unknown>;
}

export interface DatasetServer {
  /** The server's key under `tools` in tools.json (what the fixture serves it as). */
  readonly key: string;
  /** Workload name as the gateway would show it: the server's key, made a valid workload name. */
  readonly workload: string;
  readonly title: string;
  readonly description: string;
  readonly tools: readonly DatasetTool[];
}

export interface DatasetTask {
  readonly id: string;
  readonly question: string;
  readonly steps: readonly string[];
  /** Annotated tool names that exist in tools.json (the gold set). */
  readonly gold: readonly string[];
}

export interface LiveMcpBench {
  readonly dir: string;
  readonly servers: readonly DatasetServer[];
  readonly tasks: readonly DatasetTask[];
}

/** The commit of icip-cas/LiveMCPBench the data was taken from (its README in shared/datasets says so). */
export const LIVEMCPBENCH_COMMIT = "a928e57";

export function livemcpbenchDir(): string {
  return process.env.MCPMGR_LIVEMCPBENCH_DIR ?? resolve(import.meta.dir, "../../../shared/datasets/livemcpbench");
}

/** "Ant Design Components" → "ant-design-components", "Asset_Price_MCP" → "asset-price-mcp". */
function workloadName(key: string): string {
  return key
    .toLowerCase()
    .replace(/[^a-z0-9]+/g, "-")
    .replace(/^-+|-+$/g, "");
}

/** "1. get-weread-rank\n2. …" → ["get-weread-rank", …] (the README: strip the `N. ` prefix). */
function numberedLines(text: string): string[] {
  return text
    .split("\n")
    .map((line) => line.replace(/^\s*\d+\.\s*/, "").trim())
    .filter((line) => line.length > 0);
}

interface RawServer {
  name: string;
  description?: string;
  tools: Record<string, { tools: { name: string; description?: string; inputSchema?: Record<string, unknown> }[] }>;
}

interface RawTask {
  task_id: string;
  Question: string;
  "Annotator Metadata": { Steps: string; Tools: string };
}

export function loadLiveMcpBench(dir = livemcpbenchDir()): LiveMcpBench {
  const toolsPath = join(dir, "tools.json");
  const tasksPath = join(dir, "all_annotations.json");
  if (!existsSync(toolsPath) || !existsSync(tasksPath)) {
    throw new Error(
      `LiveMCPBench data not found in ${dir} (tools.json, all_annotations.json). Hint: set MCPMGR_LIVEMCPBENCH_DIR to a folder with both files: shared/datasets/livemcpbench, or tools/LiveMCPTool/tools.json and annotated_data/all_annotations.json of github.com/icip-cas/LiveMCPBench at commit ${LIVEMCPBENCH_COMMIT} (.github/workflows/release.yml fetches them so)`,
    );
  }
  const rawServers = JSON.parse(readFileSync(toolsPath, "utf8")) as RawServer[];
  const servers: DatasetServer[] = [];
  const seen = new Set<string>();
  for (const raw of rawServers) {
    for (const [key, entry] of Object.entries(raw.tools)) {
      const workload = workloadName(key);
      if (seen.has(workload)) throw new Error(`two servers map to workload name ${workload}`);
      seen.add(workload);
      servers.push({
        key,
        workload,
        title: raw.name,
        description: raw.description ?? "",
        tools: entry.tools.map((tool) => ({
          name: tool.name,
          description: tool.description ?? "",
          inputSchema: tool.inputSchema ?? { type: "object" },
        })),
      });
    }
  }
  const known = new Set(servers.flatMap((server) => server.tools.map((tool) => tool.name)));
  const rawTasks = JSON.parse(readFileSync(tasksPath, "utf8")) as RawTask[];
  const tasks: DatasetTask[] = [];
  for (const raw of rawTasks) {
    const meta = raw["Annotator Metadata"];
    const gold = [...new Set(numberedLines(meta.Tools).filter((name) => known.has(name)))];
    if (gold.length === 0) continue;
    tasks.push({ id: raw.task_id, question: raw.Question, steps: numberedLines(meta.Steps), gold });
  }
  return { dir, servers, tasks };
}

/** A search under test: the tool names (not gateway names) of its best `limit` answers to `query`. */
export type ToolNameSearch = (query: string, limit: number) => readonly string[];

export interface RecallScores {
  /** Mean over tasks of found gold / gold, one query per annotated step, limit 5. */
  readonly stepRecallAt5: number;
  /** Mean over tasks of found gold / gold, the question as the only query, limit 10. */
  readonly taskRecallAt10: number;
  readonly perTask: readonly { readonly id: string; readonly step: number; readonly task: number }[];
}

function recall(gold: readonly string[], found: ReadonlySet<string>): number {
  return gold.filter((name) => found.has(name)).length / gold.length;
}

export function scoreRecall(tasks: readonly DatasetTask[], search: ToolNameSearch): RecallScores {
  const perTask = tasks.map((task) => {
    const stepFound = new Set(task.steps.flatMap((step) => search(step, 5)));
    const taskFound = new Set(search(task.question, 10));
    return { id: task.id, step: recall(task.gold, stepFound), task: recall(task.gold, taskFound) };
  });
  const mean = (values: number[]) => values.reduce((sum, value) => sum + value, 0) / Math.max(values.length, 1);
  return {
    stepRecallAt5: mean(perTask.map((t) => t.step)),
    taskRecallAt10: mean(perTask.map((t) => t.task)),
    perTask,
  };
}
