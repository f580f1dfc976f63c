/** The `footprint` section of bench/RESULTS.md: memory per supervisor, and issue 15's target. */
import {
  type FootprintForm,
  type FootprintResult,
  footprintVerdicts,
  ISSUE_START_MIB,
  privateBytes,
  TARGET_MIB,
} from "../footprint.ts";

const MiB = 2 ** 20;
const mib = (bytes: number) => (Number.isNaN(bytes) ? "–" : (bytes / MiB).toFixed(1));
const times = (v: number) => `${v.toFixed(2)}×`;

/** The section's markdown, for a result or the reason the scenario failed. */
export function renderFootprint(
  outcome: { readonly result?: FootprintResult; readonly error?: string },
  machine: { readonly date: Date; readonly line: string },
): string {
  const stamp = machine.date
    .toISOString()
    .replace("T", " ")
    .replace(/\.\d+Z$/, " UTC");
  const out = ["## Footprint (`footprint`)", "", `Run of ${stamp}. ${machine.line}`, ""];
  if (outcome.error !== undefined || outcome.result === undefined) {
    out.push("**failed**:", "", "```", (outcome.error ?? "no result").trimEnd(), "```");
    return out.join("\n");
  }
  const r = outcome.result;
  out.push(...r.notes.map((n) => `- ${n}`), "");
  out.push(...renderTarget(r));
  for (const form of r.forms) out.push(...renderForm(form));
  return out.join("\n").trimEnd();
}

/** Private memory per idle workload against the issue's starting point and target. */
function renderTarget(r: FootprintResult): string[] {
  const verdicts = footprintVerdicts(r);
  const rows: string[] = [];
  for (const form of r.forms) {
    for (const g of form.groups.filter((x) => x.kind === "idle" && x.readings.length > 0)) {
      const mean = g.readings.reduce((sum, x) => sum + privateBytes(x), 0) / g.readings.length / MiB;
      const max = Math.max(...g.readings.map(privateBytes)) / MiB;
      const verdict = form.id === "compiled" ? verdicts.find((v) => v.group === g.title) : undefined;
      rows.push(
        `| ${form.id} | ${g.workload ?? g.title} | ${mean.toFixed(1)} | ${max.toFixed(1)} | ${times(mean / ISSUE_START_MIB)} | ${times(max / TARGET_MIB)} | ${verdict ? (verdict.met ? "met" : "**missed**") : "–"} |`,
      );
    }
  }
  return [
    `### Issue 15: at most ${TARGET_MIB} MiB private per idle workload, five running`,
    "",
    `Private memory (Private_Dirty + Swap) per supervisor; the issue was written at ${ISSUE_START_MIB} MiB (measured from source, \`bun src/main.ts\`). The target is checked on the compiled executable, the worst supervisor of each kind.`,
    "",
    `| form | workloads | private MiB mean | private MiB max | mean / ${ISSUE_START_MIB} MiB | max / ${TARGET_MIB} MiB | target |`,
    `| --- | --- |${" ---: |".repeat(4)} --- |`,
    ...rows,
    "",
  ];
}

function renderForm(form: FootprintForm): string[] {
  const out = [
    `### ${form.title}: \`${form.command.join(" ")}\``,
    "",
    "| Workloads | processes | private MiB mean | private MiB max | Anonymous MiB mean | Private_Clean MiB mean | Pss MiB mean | RSS MiB mean |",
    `| --- |${" ---: |".repeat(7)}`,
  ];
  for (const g of form.groups) {
    const n = g.readings.length;
    const mean = (pick: (x: (typeof g.readings)[number]) => number) =>
      n === 0 ? Number.NaN : g.readings.reduce((sum, x) => sum + pick(x), 0) / n;
    const max = n === 0 ? Number.NaN : Math.max(...g.readings.map(privateBytes));
    out.push(
      `| ${g.title} | ${n} | ${mib(mean(privateBytes))} | ${mib(max)} | ${mib(mean((x) => x.anonymous))} | ${mib(mean((x) => x.privateClean))} | ${mib(mean((x) => x.pss))} | ${mib(mean((x) => x.rss))} |`,
    );
  }
  out.push("");
  return out;
}
