/**
 * The gateway's `instructions` in search mode: two sentences, how to use the two tools and what the
 * group holds (each workload's name and a one-line summary), so a model knows before searching whether
 * the group can help at all. A summary is the workload's own words, not the gateway's: it is cut to
 * one short line and quoted as what the workload says of itself, and it never comes from a workload's
 * `instructions` (catalog.ts), so the gateway does not lend its authority to a member's text.
 */
import type { WorkloadSummary } from "./tool-index.ts";

const SUMMARY_LENGTH = 80;

/** The first sentence of a summary, on one line, cut at a word near SUMMARY_LENGTH characters. */
export function oneLineSummary(summary: string): string {
  // Every workload is an MCP server: saying so again in each summary only spends the line.
  const flat = summary
    .replace(/\s+/g, " ")
    .replace(/\b(?:Model Context Protocol(?: \(MCP\))?|MCP)\s+(?=server|service)/gi, "")
    .trim();
  const sentenceEnd = flat.search(/[.!?。！？](\s|$)/);
  const sentence = sentenceEnd >= 0 ? flat.slice(0, sentenceEnd) : flat;
  if (sentence.length <= SUMMARY_LENGTH) return sentence;
  const cut = sentence.slice(0, SUMMARY_LENGTH - 1).replace(/\s+\S*$/, "");
  return `${cut.length > SUMMARY_LENGTH / 2 ? cut : sentence.slice(0, SUMMARY_LENGTH - 1)}…`;
}

export function searchModeInstructions(workloads: readonly WorkloadSummary[]): string {
  const toolCount = workloads.reduce((sum, workload) => sum + workload.toolCount, 0);
  const usage =
    `This gateway's ${toolCount} tools are not listed: call find_tool with what you want to do to get ` +
    "the best matches with their inputSchema, then call_tool with a match's name and arguments (or call it by that name).";
  if (workloads.length === 0) return `${usage} The group has no running workloads yet.`;
  const parts = [...workloads]
    .sort((a, b) => a.name.localeCompare(b.name))
    .map((workload) => {
      // Double quotes inside would end the quotation early: shown as single ones.
      const summary = oneLineSummary(workload.summary).replace(/["“”]/g, "'");
      return summary ? `${workload.name} "${summary}"` : workload.name;
    });
  return `${usage} The group's workloads, each with how it describes itself: ${parts.join("; ")}.`;
}
