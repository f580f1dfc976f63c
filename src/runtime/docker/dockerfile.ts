/**
 * The Dockerfile for a protocol-scheme package (npx://, uvx://, go://): a builder stage
 * that installs or compiles the package, and a runtime stage holding only the result,
 * running as an unprivileged numeric user. Pure text generation, so the output is unit
 * tested; the build itself is in image-build.ts.
 */
import type { PackageManager } from "../source.ts";

const SERVER_UID = 10001;

/** Base images when --runtime-image is not given (builder, runtime). */
export const defaultBaseImages: Readonly<Record<PackageManager, { builder: string; runtime: string }>> = {
  npx: { builder: "node:22-alpine", runtime: "node:22-alpine" },
  uvx: { builder: "ghcr.io/astral-sh/uv:python3.12-alpine", runtime: "ghcr.io/astral-sh/uv:python3.12-alpine" },
  go: { builder: "golang:1.24-alpine", runtime: "alpine:3.21" },
};

export interface DockerfileInput {
  readonly manager: PackageManager;
  /** What the package manager installs: name[@version] for a registry package. */
  readonly spec: string;
  /** The package's own name (npm/PyPI name, Go module path), without version. */
  readonly name: string;
  /** A local project, copied into the build context as `package/`. */
  readonly local: boolean;
  /** For a local uvx project: the console script to run. */
  readonly localScript?: string;
  readonly builderImage: string;
  readonly runtimeImage: string;
  readonly addPackages: readonly string[];
  /** A CA certificate in the context as `mcpmgr-ca.crt`. */
  readonly caCert: boolean;
}

export const CA_CERT_FILE = "mcpmgr-ca.crt";
export const RESOLVE_BIN_FILE = "mcpmgr-resolve-bin.cjs";
const caPath = `/usr/local/share/ca-certificates/${CA_CERT_FILE}`;

function json(value: unknown): string {
  return JSON.stringify(value);
}

/** Steps both stages share: root for installing, the CA trusted, the extra OS packages. */
function commonSteps(input: DockerfileInput): string[] {
  const steps = ["USER root"];
  if (input.caCert) {
    steps.push(
      `COPY ${CA_CERT_FILE} ${caPath}`,
      `RUN mkdir -p /etc/ssl/certs && cat ${caPath} >> /etc/ssl/certs/ca-certificates.crt`,
      // Node reads its own bundle unless told; Python (requests, pip, uv) and Go read these.
      `ENV NODE_EXTRA_CA_CERTS=${caPath} SSL_CERT_FILE=/etc/ssl/certs/ca-certificates.crt REQUESTS_CA_BUNDLE=/etc/ssl/certs/ca-certificates.crt PIP_CERT=/etc/ssl/certs/ca-certificates.crt UV_NATIVE_TLS=1`,
    );
  }
  if (input.addPackages.length > 0) {
    const names = input.addPackages.join(" ");
    steps.push(
      `RUN if command -v apk >/dev/null 2>&1; then apk add --no-cache ${names}; ` +
        `elif command -v apt-get >/dev/null 2>&1; then apt-get update && apt-get install -y --no-install-recommends ${names} && rm -rf /var/lib/apt/lists/*; ` +
        `elif command -v microdnf >/dev/null 2>&1; then microdnf install -y ${names}; ` +
        `else echo "the base image has no apk, apt-get or microdnf to install: ${names}" >&2; exit 1; fi`,
    );
  }
  return steps;
}

function builderSteps(input: DockerfileInput): string[] {
  switch (input.manager) {
    case "npx":
      return input.local
        ? [
            "COPY package/ /app/package/",
            `COPY ${RESOLVE_BIN_FILE} /app/${RESOLVE_BIN_FILE}`,
            "WORKDIR /app/package",
            // Only a project with dependencies needs npm (and the network).
            `RUN if node -e "const p=require('./package.json');process.exit(Object.keys(p.dependencies||{}).length?0:1)"; then npm install --omit=dev --no-audit --no-fund; fi`,
            `RUN node /app/${RESOLVE_BIN_FILE} /app/package`,
          ]
        : [
            `COPY ${RESOLVE_BIN_FILE} /app/${RESOLVE_BIN_FILE}`,
            "WORKDIR /app",
            // Exec form: the spec is an argument, never shell text.
            `RUN ${json(["npm", "install", "--omit=dev", "--no-audit", "--no-fund", "--prefix", "/app", input.spec])}`,
            `RUN ${json(["node", `/app/${RESOLVE_BIN_FILE}`, `/app/node_modules/${input.name}`])}`,
          ];
    case "uvx":
      return [
        "ENV UV_TOOL_DIR=/opt/mcp/tools UV_TOOL_BIN_DIR=/opt/mcp/bin UV_PYTHON_INSTALL_DIR=/opt/mcp/python UV_LINK_MODE=copy",
        ...(input.local
          ? ["COPY package/ /src/", "RUN uv tool install /src"]
          : [`RUN ${json(["uv", "tool", "install", input.spec])}`]),
      ];
    case "go":
      return [
        "ENV CGO_ENABLED=0 GOBIN=/out GOCACHE=/tmp/gocache GOPATH=/tmp/gopath HOME=/tmp",
        ...(input.local
          ? ["COPY package/ /src/", "WORKDIR /src", "RUN mkdir -p /out && go build -trimpath -o /out/mcp-server ."]
          : [
              `RUN ${json(["go", "install", "-trimpath", input.spec])}`,
              // go install names the binary after the module path; give it one known name.
              `RUN set -e; n=$(ls /out | wc -l); [ "$n" = 1 ] || { echo "expected one binary from go install, got $n" >&2; exit 1; }; mv /out/* /out/mcp-server`,
            ]),
      ];
  }
}

function runtimeSteps(input: DockerfileInput): { steps: string[]; entrypoint: string[] } {
  switch (input.manager) {
    case "npx":
      return {
        steps: ["COPY --from=builder /app /app", "ENV NODE_ENV=production"],
        entrypoint: ["node", "/app/mcp-server"],
      };
    case "uvx": {
      const command = input.localScript ?? input.name.replace(/\[.*\]$/, "");
      return {
        steps: ["COPY --from=builder /opt/mcp /opt/mcp", "ENV PATH=/opt/mcp/bin:$PATH"],
        entrypoint: [`/opt/mcp/bin/${command}`],
      };
    }
    case "go":
      return {
        steps: ["COPY --from=builder /out/mcp-server /usr/local/bin/mcp-server"],
        entrypoint: ["/usr/local/bin/mcp-server"],
      };
  }
}

export function generateDockerfile(input: DockerfileInput): string {
  const runtime = runtimeSteps(input);
  const lines = [
    "# Generated by mcpmgr: do not edit (rebuilt when the package or options change).",
    `FROM ${input.builderImage} AS builder`,
    ...commonSteps(input),
    ...builderSteps(input),
    "",
    `FROM ${input.runtimeImage}`,
    ...commonSteps(input),
    ...runtime.steps,
    `RUN mkdir -p /home/mcp && chown ${SERVER_UID}:${SERVER_UID} /home/mcp`,
    "ENV HOME=/home/mcp",
    "WORKDIR /home/mcp",
    `USER ${SERVER_UID}:${SERVER_UID}`,
    `ENTRYPOINT ${json(runtime.entrypoint)}`,
    "",
  ];
  return lines.join("\n");
}

/**
 * Run in the builder: finds the package's executable the way npx does (the bin named
 * like the package, else its only bin, else main) and links it to /app/mcp-server.
 */
export const resolveBinScript = `"use strict";
const fs = require("fs");
const path = require("path");
const dir = process.argv[2];
const manifest = JSON.parse(fs.readFileSync(path.join(dir, "package.json"), "utf8"));
const short = String(manifest.name || "").split("/").pop();
let bin = typeof manifest.bin === "string" ? manifest.bin : undefined;
if (!bin && manifest.bin && typeof manifest.bin === "object") {
  const names = Object.keys(manifest.bin);
  bin = manifest.bin[short] || (names.length === 1 ? manifest.bin[names[0]] : undefined);
  if (!bin && names.length > 1) { console.error("the package has several executables (" + names.join(", ") + ") and none is named " + short); process.exit(1); }
}
const entry = path.resolve(dir, bin || manifest.main || "index.js");
if (!fs.existsSync(entry)) { console.error("the package's entry " + entry + " does not exist"); process.exit(1); }
fs.symlinkSync(entry, "/app/mcp-server");
`;
