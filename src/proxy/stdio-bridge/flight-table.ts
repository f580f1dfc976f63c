/**
 * The bridge's requests at the server, by bridge-wide id: client requests forwarded and not
 * answered yet (flights, flight.ts), and the bridge's own requests (the handshake, log levels,
 * subscriptions, listens), whose answers it takes itself. Ids are never reused, so the
 * server's answer finds its request by id alone.
 */
import type { JsonRpcMessage } from "../mcp-message.ts";
import { JsonRpcCode } from "../jsonrpc.ts";
import { newFlight, type Flight } from "./flight.ts";
import { errorResponse } from "./messages.ts";
import { ServerNotReading } from "./server-channel.ts";
import type { ClientSession } from "./session.ts";
import type { Sink } from "./sink.ts";
import { errorMessage } from "../../errors.ts";

export interface FlightTableHost {
  /** Sends to the server (nothing once the bridge is closed). */
  send(message: JsonRpcMessage): void;
  /** A client's request: throws when it cannot be sent (ServerNotReading among others). */
  sendRequest(message: JsonRpcMessage): void;
  /** The flight is over: what it still holds elsewhere (input rounds, session rounds) goes too. */
  onFinish(flight: Flight): void;
  readonly requestTimeoutMs: number;
}

export class FlightTable {
  readonly #flights = new Map<number, Flight>();
  /** The session each flight was counted in (ClientSession.inFlight), whatever it is attached to later. */
  readonly #countedIn = new WeakMap<Flight, ClientSession>();
  readonly #internal = new Map<number, (message: JsonRpcMessage) => void>();
  readonly #host: FlightTableHost;
  #nextId = 1;

  constructor(host: FlightTableHost) {
    this.#host = host;
  }

  get size(): number {
    return this.#flights.size;
  }

  get(upstreamId: number): Flight | undefined {
    return this.#flights.get(upstreamId);
  }

  values(): IterableIterator<Flight> {
    return this.#flights.values();
  }

  /** The flights by upstream id (read-only: routing looks them up). */
  get byId(): ReadonlyMap<number, Flight> {
    return this.#flights;
  }

  /** Forwards a client request under a fresh id; undefined (and the client told why) when it cannot be sent. */
  forward(session: ClientSession, message: JsonRpcMessage, sink: Sink, modern: boolean): Flight | undefined {
    const { flight, outgoing } = newFlight(
      this.#nextId++,
      session,
      message,
      sink,
      modern,
      performance.now() + this.#host.requestTimeoutMs,
    );
    // Registered only once it is on its way: a message that cannot be sent must leave nothing behind.
    try {
      this.#host.sendRequest(outgoing);
    } catch (err) {
      sink.send(
        err instanceof ServerNotReading
          ? errorResponse(flight.clientId, JsonRpcCode.internalError, err.message)
          : errorResponse(flight.clientId, JsonRpcCode.invalidRequest, `Invalid Request: ${errorMessage(err)}`),
      );
      return undefined;
    }
    this.#flights.set(flight.upstreamId, flight);
    session.inFlight++;
    this.#countedIn.set(flight, session);
    session.openSinks.add(sink);
    return flight;
  }

  /** A request of the bridge's own, sent with `send`; resolves with the server's answer (or never). */
  request(message: Omit<JsonRpcMessage, "id">, send: (message: JsonRpcMessage) => void): Promise<JsonRpcMessage> {
    return new Promise((resolve) => {
      const id = this.#nextId++;
      this.#internal.set(id, resolve);
      send({ ...message, id });
    });
  }

  /** An id for a request of the bridge's own whose answer it ignores. */
  ignoredId(): number {
    const id = this.#nextId++;
    this.#internal.set(id, () => {});
    return id;
  }

  /** True when `message` answered one of the bridge's own requests (and was handed to it). */
  takeInternal(message: JsonRpcMessage): boolean {
    const id = message.id as number;
    const internal = this.#internal.get(id);
    if (internal === undefined) return false;
    this.#internal.delete(id);
    internal(message);
    return true;
  }

  finish(flight: Flight): void {
    if (this.#flights.delete(flight.upstreamId)) this.#uncount(flight);
    this.#host.onFinish(flight);
    if (flight.sink !== undefined) this.detach(flight, flight.sink);
  }

  /** The sink no longer waits for this flight: it leaves its session's open sinks when no other flight uses it. */
  detach(flight: Flight, sink: Sink): void {
    for (const other of this.#flights.values()) if (other !== flight && other.sink === sink) return;
    flight.session.openSinks.delete(sink);
  }

  /** Forgets a flight and tells the server to stop working on it. */
  cancel(flight: Flight, reason: string): void {
    this.finish(flight);
    this.#host.send({
      jsonrpc: "2.0",
      method: "notifications/cancelled",
      params: { requestId: flight.upstreamId, reason },
    });
  }

  /**
   * The client's notifications/cancelled for its request `message.params.requestId` in `session`:
   * the flight is forgotten and the server hears the cancellation under the flight's own id.
   */
  cancelledByClient(session: ClientSession, message: JsonRpcMessage): void {
    const clientId = message.params?.requestId;
    for (const flight of this.#flights.values()) {
      if (flight.session !== session || flight.clientId !== clientId) continue;
      const sink = flight.sink;
      this.finish(flight);
      // No response will come: end the POST that carried the request, unless it waits for others.
      if (sink && !session.openSinks.has(sink)) sink.abort?.();
      this.#host.send({ ...message, params: { ...message.params, requestId: flight.upstreamId } });
    }
  }

  /** Cancels the flights whose deadline passed (a listen has none) and hands them back. */
  timeOut(now: number): Flight[] {
    const late = [...this.#flights.values()].filter((flight) => flight.deadline <= now && !flight.listen);
    for (const flight of late) this.cancel(flight, "timed out");
    return late;
  }

  /** Forgets every flight at once (the bridge closes) and hands them back. */
  clear(): Flight[] {
    const all = [...this.#flights.values()];
    this.#flights.clear();
    for (const flight of all) this.#uncount(flight);
    return all;
  }

  #uncount(flight: Flight): void {
    const counted = this.#countedIn.get(flight);
    if (counted === undefined) return;
    this.#countedIn.delete(flight);
    counted.inFlight--;
  }
}
