/** `mcpmgr gateway` argv → GatewaySpec: search mode's options come through the gateway's own option table. */
import { describe, expect, test } from "bun:test";
import { mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { buildGatewaySpec } from "../../src/config/gateway-spec.ts";
import { gatewayOptions } from "../../src/config/gateway-options.ts";
import { usageError } from "../support/errors.ts";

describe("--tool-search on the gateway", () => {
  test("is in the gateway's option table (the background form reuses it), off by default", () => {
    for (const name of [
      "tool-search",
      "tool-search-embeddings",
      "tool-search-embeddings-model",
      "tool-search-embeddings-key-secret",
    ])
      expect(Object.keys(gatewayOptions)).toContain(name);
    expect(buildGatewaySpec(["team"]).toolSearch).toBeUndefined();
    expect(buildGatewaySpec(["team", "--tool-search"]).toolSearch).toEqual({ embeddings: undefined });
    expect(
      buildGatewaySpec([
        "team",
        "--tool-search",
        "--tool-search-embeddings",
        "http://127.0.0.1:11434/v1/embeddings",
        "--tool-search-embeddings-model",
        "nomic-embed-text",
        "--tool-search-embeddings-key-secret",
        "embeddings-key",
      ]).toolSearch,
    ).toEqual({
      embeddings: {
        url: "http://127.0.0.1:11434/v1/embeddings",
        model: "nomic-embed-text",
        keySecret: "embeddings-key",
      },
    });
  });

  test("embedding options without --tool-search, or a bad URL, are usage errors", () => {
    usageError(() => buildGatewaySpec(["team", "--tool-search-embeddings-model", "m"]), "MISSING_OPTION");
    usageError(
      () => buildGatewaySpec(["team", "--tool-search", "--tool-search-embeddings", "not a url"]),
      "INVALID_OPTION",
    );
  });

  test("the API key goes over https, or http on loopback only; a keyless endpoint may be anywhere (review 9, F13)", () => {
    const spec = (url: string, key?: string) =>
      buildGatewaySpec([
        "team",
        "--tool-search",
        "--tool-search-embeddings",
        url,
        "--tool-search-embeddings-model",
        "m",
        ...(key ? ["--tool-search-embeddings-key-secret", key] : []),
      ]).toolSearch?.embeddings;
    expect(spec("https://api.example.com/v1/embeddings", "k")?.keySecret).toBe("k");
    expect(spec("http://localhost:11434/v1/embeddings", "k")?.keySecret).toBe("k");
    expect(spec("http://[::1]:11434/v1/embeddings", "k")?.keySecret).toBe("k");
    expect(spec("http://192.0.2.7:11434/v1/embeddings")?.url).toBe("http://192.0.2.7:11434/v1/embeddings");
    for (const url of ["http://192.0.2.7:11434/v1/embeddings", "http://127.example.com/v1/embeddings"]) {
      const error = usageError(() => spec(url, "k"), "INVALID_OPTION");
      expect(error.message).toBe(
        `--tool-search-embeddings ${url}: the API key (--tool-search-embeddings-key-secret) is sent only over https:// (http:// only on loopback)`,
      );
    }
  });

  test("an override naming a tool find_tool or call_tool conflicts with search mode", () => {
    const dir = mkdtempSync(join(tmpdir(), "mcpmgr-gateway-spec-"));
    try {
      const file = join(dir, "overrides.json");
      writeFileSync(file, JSON.stringify({ toolsOverride: { alpha_search: { name: "find_tool" } } }));
      expect(buildGatewaySpec(["team", "--tools-override", file]).tools?.realNames.get("find_tool")).toBe(
        "alpha_search",
      );
      usageError(() => buildGatewaySpec(["team", "--tool-search", "--tools-override", file]), "CONFLICTING_OPTIONS");
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });
});

test("--thv-ca-bundle naming a file that cannot be read is refused though no option of this gateway uses it", () => {
  const err = usageError(() => buildGatewaySpec(["team", "--thv-ca-bundle", "/nonexistent/ca.pem"]), "INVALID_OPTION");
  expect(err.message).toBe('--thv-ca-bundle "/nonexistent/ca.pem": cannot read the file');
});

test("gateway --help's --otel-service-name default is the one a gateway reports, whatever its --name", () => {
  const spec = buildGatewaySpec(["work", "--detach", "--name", "gw", "--otel-endpoint", "https://otel.example.com"]);
  expect(spec.telemetry?.serviceName).toBe("thv-gateway-work");
  expect(gatewayOptions["otel-service-name"].defaultText?.replace("<group>", "work")).toBe("thv-gateway-work");
});
