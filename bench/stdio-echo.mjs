#!/usr/bin/env node
// A deliberately minimal, fast stdio MCP server for benchmarks: newline-delimited
// JSON-RPC 2.0 on stdin/stdout, no SDK (its validation would make the server the
// bottleneck and hide what the bridge in front of it costs). The stdio twin of
// bench/upstream.ts, answering just enough of MCP for a tools/call loop:
//
//   initialize                 -> result (the client's protocol version when known)
//   notifications/*            -> nothing
//   tools/list, ping, tools/call echo ({text} -> "Echo: text")
//   other requests             -> JSON-RPC -32601; responses from the client are ignored
//
// Every complete line of a stdin chunk is answered, and the answers go out in one
// write (stdout to a pipe is synchronous in Node on Linux). Exits when stdin ends.
//
//   node bench/stdio-echo.mjs        (also the bin of bench/stdio-echo-pkg, for `mcpmgr run npx://./bench/stdio-echo-pkg`)
//
// Plain ESM JavaScript so `node` runs it as it is, like a published stdio server.

const PROTOCOL_VERSIONS = new Set(["2024-11-05", "2025-03-26", "2025-06-18", "2025-11-25"]);
const DEFAULT_VERSION = "2025-06-18";

const ECHO_TOOL = {
  name: "echo",
  description: "Echoes back the input text",
  inputSchema: {
    type: "object",
    properties: { text: { type: "string", description: "Text to echo" } },
    required: ["text"],
  },
};

const result = (id, value) => JSON.stringify({ jsonrpc: "2.0", id, result: value });
const error = (id, code, message) => JSON.stringify({ jsonrpc: "2.0", id, error: { code, message } });

/** The answer to one line, or undefined when it needs none. */
function answer(line) {
  let msg;
  try {
    msg = JSON.parse(line);
  } catch {
    return error(null, -32700, "Parse error");
  }
  if (msg === null || typeof msg !== "object" || Array.isArray(msg)) return error(null, -32600, "Invalid Request");
  const { id, method } = msg;
  if (typeof method !== "string") return undefined; // a response from the client
  if (id === undefined) return undefined; // a notification
  switch (method) {
    case "tools/call": {
      const params = msg.params ?? {};
      if (params.name !== "echo") {
        return result(id, { content: [{ type: "text", text: `Unknown tool: ${String(params.name)}` }], isError: true });
      }
      const text = params.arguments?.text;
      return result(id, { content: [{ type: "text", text: `Echo: ${typeof text === "string" ? text : ""}` }] });
    }
    case "initialize": {
      const wanted = msg.params?.protocolVersion;
      return result(id, {
        protocolVersion: PROTOCOL_VERSIONS.has(wanted) ? wanted : DEFAULT_VERSION,
        capabilities: { tools: {} },
        serverInfo: { name: "mcpmgr-bench-stdio-echo", version: "0.1.0" },
      });
    }
    case "tools/list":
      return result(id, { tools: [ECHO_TOOL] });
    case "ping":
      return result(id, {});
    default:
      return error(id, -32601, `Method not found: ${method}`);
  }
}

let pending = "";
process.stdin.setEncoding("utf8");
process.stdin.on("data", (chunk) => {
  pending += chunk;
  let out = "";
  let start = 0;
  let nl;
  while ((nl = pending.indexOf("\n", start)) !== -1) {
    const line = pending.slice(start, nl).trim();
    start = nl + 1;
    if (line === "") continue;
    const reply = answer(line);
    if (reply !== undefined) out += `${reply}\n`;
  }
  pending = start === pending.length ? "" : pending.slice(start);
  if (out !== "") process.stdout.write(out);
});
process.stdin.on("end", () => process.exit(0));
process.stdout.on("error", () => process.exit(0)); // the client went away
