/**
 * Per-request facts kept beside a Request (the authenticated principal, the client's raw
 * token for token exchange). Middleware hands on new Request objects (a rewritten body,
 * added headers): `carryRequestState(from, to)` moves every such fact along, so nothing
 * later in the chain sees an anonymous request by accident.
 */
const maps: WeakMap<Request, unknown>[] = [];

/** A WeakMap whose entries follow a request through the chain. */
export function requestState<T>(): WeakMap<Request, T> {
  const map = new WeakMap<Request, T>();
  maps.push(map as WeakMap<Request, unknown>);
  return map;
}

export function carryRequestState(from: Request, to: Request): Request {
  for (const map of maps) if (map.has(from)) map.set(to, map.get(from));
  return to;
}
