/**
 * W3C trace context in a request's `params._meta` (`traceparent`, `tracestate`; MCP 2026-07-28,
 * SEP-414, and the OpenTelemetry semantic conventions for MCP): read from the body the chain
 * already parsed, and, when the request carried it, rewritten for the upstream to the proxy's
 * span. Requests without it are never rewritten (re-serialising a body costs). Used only by the
 * telemetry middleware, so it loads only with telemetry.
 */
import type { TextMapGetter, TextMapSetter } from "@opentelemetry/api";
import type { JsonRpcMessage } from "../proxy/mcp-message.ts";
import { rpcBodyOf, type RpcBody } from "./rpc-body.ts";
import { duplicateKeyIn } from "./strict-json.ts";
import { isObject } from "../objects.ts";

type Meta = Record<string, unknown>;

export const metaGetter: TextMapGetter<Meta> = {
  get: (carrier, key) => (typeof carrier[key] === "string" ? (carrier[key] as string) : undefined),
  keys: (carrier) => Object.keys(carrier),
};
const metaSetter: TextMapSetter<Meta> = {
  set: (carrier, key, value) => {
    carrier[key] = value;
  },
};

/** The request's `_meta` when it holds a `traceparent` string (whether well-formed is the propagator's call). */
export function traceMetaOf(message: JsonRpcMessage | undefined): Meta | undefined {
  const params: unknown = message?.params;
  if (!isObject(params)) return undefined;
  const meta = params._meta;
  return isObject(meta) && typeof meta.traceparent === "string" ? meta : undefined;
}

/**
 * The body with `message`'s `_meta` trace context replaced by what `inject` writes (the proxy's
 * span), everything else as parsed; undefined when it cannot be rewritten faithfully: a body
 * that repeats a key is left as it is, for the message checks to refuse (re-serialising it
 * would silently keep only the last value).
 */
export function withTraceMeta(
  body: RpcBody,
  message: JsonRpcMessage,
  meta: Meta,
  inject: (carrier: Meta, setter: TextMapSetter<Meta>) => void,
): RpcBody | undefined {
  if (JSON.stringify(body.value) !== body.text && duplicateKeyIn(body.text) !== undefined) return undefined;
  const nextMeta: Meta = { ...meta };
  // `tracestate` follows the span's context: the one received, or none when it held none.
  delete nextMeta.tracestate;
  inject(nextMeta, metaSetter);
  const rewritten = { ...message, params: { ...(message.params as object), _meta: nextMeta } };
  const value = Array.isArray(body.value) ? body.value.map((m) => (m === message ? rewritten : m)) : rewritten;
  return rpcBodyOf(JSON.stringify(value), value);
}
