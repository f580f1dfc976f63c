/** The `mcpmgr` root command; subcommands load lazily so `--help` and `proxy` start fast. */
import { defineCommand } from "citty";
import { version } from "../version.ts";

export const rootCommand = defineCommand({
  meta: {
    name: "mcpmgr",
    version,
    description: "Run MCP servers safely behind a fast streaming proxy",
  },
  args: {
    help: { type: "boolean", alias: "h", description: "Show this help" },
    debug: { type: "boolean", description: "Print debug output", default: false },
    version: { type: "boolean", description: "Print the version and exit" },
  },
  subCommands: {
    run: () => import("./run.ts").then((m) => m.default),
    proxy: () => import("./proxy.ts").then((m) => m.default),
    gateway: () => import("./gateway.ts").then((m) => m.default),
    list: () => import("./list.ts").then((m) => m.default),
    stop: () => import("./stop.ts").then((m) => m.default),
    start: () => import("./start.ts").then((m) => m.start),
    restart: () => import("./start.ts").then((m) => m.restart),
    rm: () => import("./rm.ts").then((m) => m.default),
    logs: () => import("./logs.ts").then((m) => m.default),
    export: () => import("./export.ts").then((m) => m.default),
    secret: () => import("./secret.ts").then((m) => m.default),
    registry: () => import("./registry.ts").then((m) => m.default),
    group: () => import("./group.ts").then((m) => m.default),
    client: () => import("./client.ts").then((m) => m.default),
    __supervise: () => import("./supervise.ts").then((m) => m.default),
  },
});
