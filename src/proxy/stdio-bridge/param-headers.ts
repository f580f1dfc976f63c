/**
 * `Mcp-Param-{Name}` headers checked at the bridge (MCP 2026-07-28, Streamable HTTP "custom
 * headers from tool parameters"). A tool's input schema may mark arguments with
 * `x-mcp-header`; a 2026-07-28 client then mirrors their values into headers so that
 * intermediaries can route on them without reading the body, and the server that reads the
 * body MUST refuse a call whose mirrored headers are missing, malformed or disagree with it
 * (400, -32020 HeaderMismatch) — otherwise what a load balancer routed on and what the tool
 * executes could differ. A stdio server never sees HTTP headers, so the bridge checks them,
 * against the declarations in the server's own tools/list: learnt from every list the server
 * answers, read by the bridge itself when a call names a tool it has not seen listed, and
 * forgotten on notifications/tools/list_changed.
 */
import { errorMessage } from "../../errors.ts";
import { JsonRpcCode } from "../jsonrpc.ts";
import type { JsonRpcMessage } from "../mcp-message.ts";
import { checkParamHeaders, type HeaderDeclaration, scanToolHeaders } from "../tool-headers.ts";
import type { ServerInit } from "./handshake.ts";
import { type EdgeRefusal, metaKey, modernProtocolVersion } from "./modern.ts";

export interface ParamHeaderHost {
  /** Sends a request of the bridge's own to the server; resolves with its answer. */
  request(message: Omit<JsonRpcMessage, "id">): Promise<JsonRpcMessage>;
  /** The server, once its handshake is done (a 2026-07-28 one needs `_meta` on the request). */
  server(): ServerInit | undefined;
  readonly clientInfo: { name: string; version: string } | undefined;
  /** How long one page of tools/list may take. */
  readonly timeoutMs: number;
  readonly onLog: ((level: "debug" | "warn", message: string) => void) | undefined;
}

/** A server that pages its tool list past this is read no further (the calls to later tools go unchecked). */
const maxPages = 100;
/** Readings of a list that changed under them before a call is refused rather than waiting on. */
const maxReads = 3;

export class ParamHeaderChecks {
  readonly #host: ParamHeaderHost;
  readonly #declarations = new Map<string, readonly HeaderDeclaration[]>();
  /** Tools with broken declarations already warned about. */
  readonly #warned = new Set<string>();
  /** The whole list was read since it last changed: a tool not in it does not exist. */
  #complete = false;
  #reading: Promise<void> | undefined;
  /** Bumped by forget(), so a read that started before a change does not mark the new list complete. */
  #generation = 0;

  constructor(host: ParamHeaderHost) {
    this.#host = host;
  }

  /** A tools/list page the server answered (to a client or to the bridge). */
  learn(result: unknown): void {
    const tools = (result as { tools?: unknown } | undefined)?.tools;
    if (!Array.isArray(tools)) return;
    for (const tool of tools as { name?: unknown; inputSchema?: unknown }[]) {
      if (typeof tool?.name !== "string") continue;
      const scan = scanToolHeaders(tool.inputSchema);
      // Conforming clients leave a tool with broken declarations out and never call it; its
      // headers are not checked here, and the operator hears about it once.
      if (!scan.valid && !this.#warned.has(tool.name)) {
        this.#warned.add(tool.name);
        this.#host.onLog?.("warn", `tool ${JSON.stringify(tool.name)} has an invalid x-mcp-header: ${scan.reason}`);
      }
      this.#declarations.set(tool.name, scan.valid ? scan.declarations : []);
    }
  }

  /** The server's tool list changed. */
  forget(): void {
    this.#declarations.clear();
    this.#complete = false;
    this.#reading = undefined;
    this.#generation++;
  }

  /**
   * Whether a 2026-07-28 tools/call's `Mcp-Param-*` headers agree with its arguments; answered
   * at once when the tool's declarations are known (the usual case), after reading the list otherwise.
   */
  check(headers: Headers, message: JsonRpcMessage): EdgeRefusal | undefined | Promise<EdgeRefusal | undefined> {
    const tool = message.params?.name;
    if (typeof tool !== "string") return undefined; // the server answers a call without a name
    const known = this.#declarations.get(tool);
    if (known !== undefined) return checkParamHeaders(headers, message.params?.arguments, known);
    if (this.#complete) return undefined; // no such tool: the server answers that
    return this.#checkAfterReading(headers, message, tool);
  }

  async #checkAfterReading(headers: Headers, message: JsonRpcMessage, tool: string): Promise<EdgeRefusal | undefined> {
    // A list that changes while it is read is read again: a call is never let through unchecked.
    for (let attempt = 0; !this.#declarations.has(tool) && !this.#complete; attempt++) {
      const cannot = (why: string): EdgeRefusal => ({
        status: 502,
        code: JsonRpcCode.internalError,
        message: `cannot check the call's Mcp-Param headers: ${why}`,
      });
      if (attempt === maxReads) return cannot("the MCP server's tool list kept changing while it was read");
      try {
        await this.#readList();
      } catch (err) {
        return cannot(`the MCP server's tools/list failed (${errorMessage(err)})`);
      }
    }
    return checkParamHeaders(headers, message.params?.arguments, this.#declarations.get(tool) ?? []);
  }

  #readList(): Promise<void> {
    if (this.#reading === undefined) {
      const reading = this.#readPages().finally(() => {
        if (this.#reading === reading) this.#reading = undefined;
      });
      this.#reading = reading;
    }
    return this.#reading;
  }

  async #readPages(): Promise<void> {
    const generation = this.#generation;
    let cursor: string | undefined;
    for (let page = 0; page < maxPages; page++) {
      const answer = await this.#listPage(cursor);
      if (generation !== this.#generation) return;
      // A server without tools: nothing to check, and its calls fail on their own.
      if (answer.error !== undefined) break;
      this.learn(answer.result);
      const next = (answer.result as { nextCursor?: unknown } | undefined)?.nextCursor;
      if (typeof next !== "string" || next === "") break;
      cursor = next;
    }
    this.#complete = true;
  }

  #listPage(cursor: string | undefined): Promise<JsonRpcMessage> {
    const params: Record<string, unknown> = cursor !== undefined ? { cursor } : {};
    const server = this.#host.server();
    if (server?.era === "modern") {
      const versions = server.supportedVersions;
      params._meta = {
        [metaKey.protocolVersion]: versions.includes(modernProtocolVersion) ? modernProtocolVersion : versions[0],
        [metaKey.clientCapabilities]: {},
        [metaKey.clientInfo]: this.#host.clientInfo ?? { name: "mcpmgr", version: "0" },
      };
    }
    let timer: ReturnType<typeof setTimeout> | undefined;
    const timeoutMs = this.#host.timeoutMs;
    return Promise.race([
      this.#host.request({ jsonrpc: "2.0", method: "tools/list", params }),
      new Promise<never>((_, reject) => {
        timer = setTimeout(() => reject(new Error(`no answer in ${timeoutMs / 1000} s`)), timeoutMs);
      }),
    ]).finally(() => clearTimeout(timer));
  }
}
