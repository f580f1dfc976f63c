/**
 * The gateway's `instructions` in search mode: two sentences, how to use the two tools and what the
 * group holds (each workload's name and a one-line summary), so a model knows before searching whether
 * the group can help at all.
 *
 * They are read on every turn next to the two tools' definitions, so they have a budget
 * (INSTRUCTIONS_BUDGET characters, ~325 tokens: with tools/list, under 600 tokens). A large group
 * gives up detail in steps, only as far as needed: shorter summaries, then names alone, then the first
 * names and how many more. find_tool searches every workload whatever the instructions could name.
 */
import type { WorkloadSummary } from "./tool-index.ts";

const SUMMARY_LENGTH = 80;
/** Characters the instructions stay within, whatever the group's size. */
export const INSTRUCTIONS_BUDGET = 1300;
/** Summary lengths tried, longest first, before names alone. */
const SUMMARY_STEPS = [SUMMARY_LENGTH, 60, 40, 25];

/** The first sentence of a summary, on one line, cut at a word near `length` characters. */
export function oneLineSummary(summary: string, length = SUMMARY_LENGTH): string {
  // Every workload is an MCP server: saying so again in each summary only spends the line.
  const flat = summary
    .replace(/\s+/g, " ")
    .replace(/\b(?:Model Context Protocol(?: \(MCP\))?|MCP)\s+(?=server|service)/gi, "")
    .trim();
  const sentenceEnd = flat.search(/[.!?。！？](\s|$)/);
  const sentence = sentenceEnd >= 0 ? flat.slice(0, sentenceEnd) : flat;
  if (sentence.length <= length) return sentence;
  const cut = sentence.slice(0, length - 1).replace(/\s+\S*$/, "");
  return `${cut.length > length / 2 ? cut : sentence.slice(0, length - 1)}…`;
}

function workloadList(sorted: readonly WorkloadSummary[], summaryLength: number): string {
  return sorted
    .map((workload) => {
      const summary = summaryLength > 0 ? oneLineSummary(workload.summary, summaryLength) : "";
      return summary ? `${workload.name} (${summary})` : workload.name;
    })
    .join("; ");
}

export function searchModeInstructions(workloads: readonly WorkloadSummary[], budget = INSTRUCTIONS_BUDGET): string {
  const toolCount = workloads.reduce((sum, workload) => sum + workload.toolCount, 0);
  const usage =
    `This gateway's ${toolCount} tools are not listed: call find_tool with what you want to do to get ` +
    "the best matches with their inputSchema, then call_tool with a match's name and arguments (or call it by that name).";
  if (workloads.length === 0) return `${usage} The group has no running workloads yet.`;
  const sorted = [...workloads].sort((a, b) => (a.name < b.name ? -1 : a.name > b.name ? 1 : 0));
  const sentence = (list: string) => `${usage} The group's workloads: ${list}.`;
  for (const length of [...SUMMARY_STEPS, 0]) {
    const text = sentence(workloadList(sorted, length));
    if (text.length <= budget) return text;
  }
  // Not even the names fit: as many as do, then how many more.
  const names: string[] = [];
  for (const [i, workload] of sorted.entries()) {
    const rest = sorted.length - i - 1;
    const candidate = sentence(`${[...names, workload.name].join("; ")}${rest > 0 ? ` and ${rest} more` : ""}`);
    if (candidate.length > budget) break;
    names.push(workload.name);
  }
  return sentence(`${names.join("; ")} and ${sorted.length - names.length} more`);
}
