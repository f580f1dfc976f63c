/**
 * `bun run compile --all`: one binary per release target, each of the right format,
 * and a SHA256SUMS that matches them.
 */
import { expect, test } from "bun:test";
import { createHash } from "node:crypto";
import { readFile } from "node:fs/promises";
import { join } from "node:path";
import { REPO_ROOT } from "../support/processes.ts";

const magic: Readonly<Record<string, (bytes: Uint8Array) => boolean>> = {
  linux: (b) => b[0] === 0x7f && b[1] === 0x45 && b[2] === 0x4c && b[3] === 0x46, // ELF
  darwin: (b) => b[0] === 0xcf && b[1] === 0xfa && b[2] === 0xed && b[3] === 0xfe, // Mach-O 64
  windows: (b) => b[0] === 0x4d && b[1] === 0x5a, // MZ
};

test(
  "every release binary is built and listed in SHA256SUMS with its real digest",
  async () => {
    const build = Bun.spawnSync([process.execPath, "run", "compile", "--all"], {
      cwd: REPO_ROOT,
      stdout: "pipe",
      stderr: "pipe",
    });
    expect(build.exitCode).toBe(0);
    const dist = join(REPO_ROOT, "dist");
    const sums = (await readFile(join(dist, "SHA256SUMS"), "utf8")).trim().split("\n");
    const files = sums.map((line) => line.split(/\s+/)[1]);
    expect(files).toEqual([
      "mcpmgr-linux-x64",
      "mcpmgr-linux-arm64",
      "mcpmgr-darwin-x64",
      "mcpmgr-darwin-arm64",
      "mcpmgr-windows-x64.exe",
    ]);
    for (const line of sums) {
      const [digest, file] = line.split(/\s+/) as [string, string];
      const bytes = new Uint8Array(await readFile(join(dist, file)));
      expect(createHash("sha256").update(bytes).digest("hex")).toBe(digest);
      const os = file.split("-")[1] as string;
      expect(magic[os]?.(bytes)).toBe(true);
    }
  },
  { timeout: 300_000 },
);
