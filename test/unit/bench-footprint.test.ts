/** The footprint scenario's arithmetic: what counts as a workload's private memory, and issue 15's verdict. */
import { expect, test } from "bun:test";
import { type FootprintResult, footprintVerdicts, privateBytes, TARGET_MIB } from "../../bench/footprint.ts";
import type { SmapsRollup } from "../../bench/lib/proc.ts";

const MiB = 2 ** 20;
const reading = (privateDirty: number, extra: Partial<SmapsRollup> = {}): SmapsRollup => ({
  rss: 60 * MiB,
  pss: 15 * MiB,
  privateClean: 0,
  privateDirty,
  sharedClean: 40 * MiB,
  sharedDirty: 0,
  swap: 0,
  anonymous: privateDirty,
  ...extra,
});

test("private memory is what the process wrote (Private_Dirty) and swapped, not the executable's clean pages", () => {
  expect(privateBytes(reading(8 * MiB, { privateClean: 30 * MiB }))).toBe(8 * MiB);
  expect(privateBytes(reading(8 * MiB, { swap: 2 * MiB }))).toBe(10 * MiB);
});

test("the target is checked on the compiled executable's worst idle supervisor of each kind", () => {
  const result: FootprintResult = {
    notes: [],
    forms: [
      {
        id: "compiled",
        title: "compiled",
        command: ["mcpmgr"],
        groups: [
          { title: "stdio", kind: "idle", workload: "stdio", readings: [reading(5 * MiB), reading(TARGET_MIB * MiB)] },
          { title: "remote", kind: "idle", workload: "remote", readings: [reading(5 * MiB), reading(21 * MiB)] },
          { title: "bridge under load", kind: "load", readings: [reading(40 * MiB)] },
        ],
      },
      {
        id: "source",
        title: "source",
        command: ["bun", "src/main.ts"],
        groups: [{ title: "stdio", kind: "idle", workload: "stdio", readings: [reading(30 * MiB)] }],
      },
    ],
  };
  expect(footprintVerdicts(result)).toEqual([
    { group: "stdio", maxMiB: TARGET_MIB, met: true },
    { group: "remote", maxMiB: 21, met: false },
  ]);
});
