/**
 * `mcpmgr proxy stdio TARGET` started as an AI client's config entry starts it (the SDK's stdio
 * transport, the CLI from source), with what it writes on stderr kept for the test to read.
 */
import { StdioClientTransport } from "@modelcontextprotocol/sdk/client/stdio.js";
import { CLI_ENTRY, REPO_ROOT } from "./processes.ts";

export function relayTransport(
  target: string,
  env: Record<string, string>,
): { transport: StdioClientTransport; stderr: () => string } {
  const transport = new StdioClientTransport({
    command: process.execPath,
    args: [CLI_ENTRY, "proxy", "stdio", target],
    cwd: REPO_ROOT,
    env: { ...(process.env as Record<string, string>), NO_COLOR: "1", ...env },
    stderr: "pipe",
  });
  let written = "";
  transport.stderr?.on("data", (chunk: Buffer) => (written += chunk.toString()));
  return { transport, stderr: () => written };
}
