/**
 * A container engine that keeps mcpmgr's clean-up of built images waiting: a byte relay on a Unix socket in
 * front of the real Docker socket that holds every list of images by repository (`GET …/images/json` with a
 * `reference` filter, what runtime/docker/superseded-images.ts asks) until `release()`. Everything else passes
 * as it comes, byte for byte (attach upgrades and followed logs too), so a workload starts through it as usual.
 */
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import type { Socket } from "bun";

const DOCKER_SOCKET = "/var/run/docker.sock";
const heldList = /GET \S*\/images\/json\?\S*reference/;

export interface HeldImageList {
  /** The relay, in DOCKER_HOST form. */
  readonly endpoint: string;
  /** Lists of images by repository held so far. */
  readonly held: number;
  /** Lets the held lists (and every later one) through. */
  release(): void;
  close(): void;
}

/** Writes to a Bun socket in order and whole: what a full socket did not take waits for its `drain`. */
class Outbox {
  #queue: Buffer[] = [];
  readonly socket: Socket<unknown>;
  constructor(socket: Socket<unknown>) {
    this.socket = socket;
  }
  write(bytes: Buffer): void {
    this.#queue.push(bytes);
    this.drain();
  }
  drain(): void {
    while (this.#queue.length > 0) {
      const next = this.#queue[0] as Buffer;
      const written = this.socket.write(next);
      if (written < next.byteLength) {
        this.#queue[0] = next.subarray(Math.max(written, 0));
        return;
      }
      this.#queue.shift();
    }
  }
}

interface Link {
  /** Towards the caller. */
  caller: Outbox;
  /** Towards the engine, once connected. */
  engine?: Outbox;
  /** Bytes from the caller not yet handed on: all of them, once a held list is among them. */
  pending: Buffer[];
  holding: boolean;
}

export function heldImageList(): HeldImageList {
  const dir = mkdtempSync(join(tmpdir(), "mcpmgr-held-list-"));
  const socket = join(dir, "docker.sock");
  let held = 0;
  let released = false;
  const links = new Set<Link>();
  const flush = (link: Link) => {
    if (link.engine === undefined || link.holding) return;
    for (const chunk of link.pending.splice(0)) link.engine.write(chunk);
  };
  const server = Bun.listen<Link>({
    unix: socket,
    socket: {
      open(caller) {
        const link: Link = { caller: new Outbox(caller), pending: [], holding: false };
        caller.data = link;
        links.add(link);
        void Bun.connect<Outbox>({
          unix: DOCKER_SOCKET,
          socket: {
            data(_engine, bytes) {
              link.caller.write(Buffer.from(bytes));
            },
            drain(engine) {
              engine.data.drain();
            },
            close() {
              caller.end();
            },
            error() {
              caller.end();
            },
          },
        }).then((engine) => {
          engine.data = new Outbox(engine);
          link.engine = engine.data;
          flush(link);
        });
      },
      data(caller, bytes) {
        const link = caller.data;
        if (!released && !link.holding && heldList.test(Buffer.from(bytes).toString("latin1"))) {
          link.holding = true;
          held++;
        }
        link.pending.push(Buffer.from(bytes));
        flush(link);
      },
      drain(caller) {
        caller.data.caller.drain();
      },
      close(caller) {
        links.delete(caller.data);
        caller.data.engine?.socket.end();
      },
    },
  });
  return {
    endpoint: `unix://${socket}`,
    get held() {
      return held;
    },
    release() {
      released = true;
      for (const link of links) {
        link.holding = false;
        flush(link);
      }
    },
    close() {
      server.stop(true);
      rmSync(dir, { recursive: true, force: true });
    },
  };
}
