/**
 * Attaching to a container's stdin/stdout/stderr. Docker ignores the body of an attach
 * request; Podman's Docker-compatible API hands it to the container's stdin. dockerode
 * sends its options as a JSON body, so on Podman a stdio server's first line arrived as
 * `{"stream":true,...}{"jsonrpc":...}` and the first MCP message was lost. For Podman the
 * attach is dialled with an empty body (the options in the query only).
 */
import type { Duplex } from "node:stream";
import type Docker from "dockerode";
import type { ContainerEngine } from "./engine.ts";

interface DialOptions {
  path: string;
  method: "POST";
  isStream: true;
  hijack: boolean;
  openStdin: boolean;
  statusCodes: Record<number, true | string>;
  options: Record<string, boolean>;
  /** An empty body: sent as such (Content-Length: 0), which also flushes the request. */
  file: Buffer;
}
type Dial = (options: DialOptions, callback: (err: unknown, stream: unknown) => void) => void;

export async function attachStreams(
  engine: ContainerEngine,
  container: Docker.Container,
  stdin: boolean,
): Promise<Duplex> {
  const query = { stream: true, stdin, stdout: true, stderr: true };
  if (engine.kind !== "podman") return (await container.attach({ ...query, hijack: stdin })) as unknown as Duplex;
  const modem = engine.docker.modem as unknown as { dial: Dial };
  return new Promise<Duplex>((resolve, reject) =>
    modem.dial(
      {
        path: `/containers/${container.id}/attach?`,
        method: "POST",
        isStream: true,
        hijack: stdin,
        openStdin: stdin,
        statusCodes: { 101: true, 200: true, 404: "no such container", 500: "server error" },
        options: query,
        file: Buffer.alloc(0),
      },
      (err, stream) => (err ? reject(err) : resolve(stream as Duplex)),
    ),
  );
}
