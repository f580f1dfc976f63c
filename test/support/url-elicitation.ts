/**
 * The URL elicitation fixture (test/fixtures/url-elicitation-server.ts): its path, for a stdio
 * member, and its 2025-11-25 server over HTTP, for a remote one.
 */
import { join } from "node:path";
import { REPO_ROOT, spawnUntil } from "./processes.ts";

export const URL_ELICITATION_FIXTURE = join(REPO_ROOT, "test/fixtures/url-elicitation-server.ts");

export interface UrlElicitationServer {
  readonly url: string;
  stop(): Promise<number>;
}

/** The fixture's 2025-11-25 server over streamable HTTP, once it listens. */
export async function startLegacyUrlElicitationServer(): Promise<UrlElicitationServer> {
  const running = await spawnUntil(
    [process.execPath, URL_ELICITATION_FIXTURE, "legacy-http"],
    /listening on (http:\/\/\S+)/,
    { timeoutMs: 15_000 },
  );
  return { url: running.match[1] as string, stop: () => running.stop() };
}
