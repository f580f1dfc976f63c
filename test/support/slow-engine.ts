/**
 * A slow container engine for tests: a relay on a Unix socket in front of the real Docker socket
 * that holds each container-create request for a while before handing it on. The real engine
 * still does all the work, once the request reaches it, whether or not the caller is still
 * waiting for the answer, as an engine busy with a create does. Other requests pass at once.
 * Only plain requests are relayed (no attach upgrades): enough for what happens up to a create.
 */
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";

const DOCKER_SOCKET = "/var/run/docker.sock";
/** Hop-by-hop and framing headers: the relay frames its answers itself. */
const DROPPED_HEADERS = ["connection", "keep-alive", "transfer-encoding", "content-length"];

export interface SlowEngine {
  /** The relay, in DOCKER_HOST form. */
  readonly endpoint: string;
  /** Container creates received from callers so far. */
  readonly createsReceived: number;
  /** Container creates the real engine has answered so far. */
  readonly createsAnswered: number;
  close(): void;
}

export function slowEngine(createDelayMs: number): SlowEngine {
  const dir = mkdtempSync(join(tmpdir(), "mcpmgr-slow-engine-"));
  const socket = join(dir, "docker.sock");
  let createsReceived = 0;
  let createsAnswered = 0;
  const server = Bun.serve({
    unix: socket,
    async fetch(request) {
      const url = new URL(request.url);
      const body = request.method === "GET" || request.method === "HEAD" ? undefined : await request.arrayBuffer();
      const headers = new Headers(request.headers);
      for (const name of DROPPED_HEADERS) headers.delete(name);
      const isCreate = request.method === "POST" && /\/containers\/create$/.test(url.pathname);
      if (isCreate) {
        createsReceived++;
        await Bun.sleep(createDelayMs);
      }
      // Not tied to the caller's request: a caller that went away does not stop the engine's work.
      const answer = await fetch(`http://docker${url.pathname}${url.search}`, {
        unix: DOCKER_SOCKET,
        method: request.method,
        headers,
        ...(body !== undefined ? { body } : {}),
      });
      const payload = await answer.arrayBuffer();
      if (isCreate) createsAnswered++;
      const answerHeaders = new Headers(answer.headers);
      for (const name of DROPPED_HEADERS) answerHeaders.delete(name);
      return new Response(request.method === "HEAD" ? null : payload, {
        status: answer.status,
        headers: answerHeaders,
      });
    },
  });
  return {
    endpoint: `unix://${socket}`,
    get createsReceived() {
      return createsReceived;
    },
    get createsAnswered() {
      return createsAnswered;
    },
    close() {
      server.stop(true);
      rmSync(dir, { recursive: true, force: true });
    },
  };
}
