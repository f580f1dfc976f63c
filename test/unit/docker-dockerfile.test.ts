/** Generated Dockerfiles for npx/uvx/go packages, the content-derived build tag, and the checked build inputs. */
import { afterAll, beforeAll, describe, expect, test, setDefaultTimeout } from "bun:test";
import { mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { generateDockerfile } from "../../src/runtime/docker/dockerfile.ts";
import {
  dockerfileInput,
  prepareBuild,
  readCaCert,
  validateAddPackages,
  type BuildOptions,
} from "../../src/runtime/docker/image-build.ts";
import type { PackageManager } from "../../src/runtime/source.ts";
import { rejection } from "../support/errors.ts";

// Real processes and servers: more than bun's 5 s on a loaded machine (the preload's default
// reaches only the first file of a run).
setDefaultTimeout(60_000);

const attempt = async (fn: () => unknown) => fn();

type Source = { kind: "package"; manager: PackageManager; name: string; version?: string; localPath?: string };
const pkg = (manager: PackageManager, name: string, extra: { version?: string; localPath?: string } = {}): Source => ({
  kind: "package",
  manager,
  name,
  ...extra,
});
const plain: BuildOptions = { addPackages: [] };

/** The Dockerfile's two stages, as instruction lines (blank lines and comments dropped). */
function stages(dockerfile: string): { builder: string[]; runtime: string[] } {
  const lines = dockerfile.split("\n").filter((line) => line.trim() !== "" && !line.startsWith("#"));
  const froms = lines.flatMap((line, i) => (line.startsWith("FROM ") ? [i] : []));
  expect(froms).toHaveLength(2);
  const [first = 0, second = 0] = froms;
  expect(first).toBe(0);
  return { builder: lines.slice(first, second), runtime: lines.slice(second) };
}

/** Checks the shape every generated Dockerfile has and returns its stages and entrypoint. */
function checked(dockerfile: string, builderImage: string, runtimeImage: string) {
  const { builder, runtime } = stages(dockerfile);
  expect(builder[0]).toBe(`FROM ${builderImage} AS builder`);
  expect(runtime[0]).toBe(`FROM ${runtimeImage}`);
  expect(runtime.at(-2)).toBe("USER 10001:10001");
  const last = runtime.at(-1) ?? "";
  expect(last).toStartWith("ENTRYPOINT [");
  const entrypoint: unknown = JSON.parse(last.slice("ENTRYPOINT ".length));
  expect(Array.isArray(entrypoint) && entrypoint.every((word) => typeof word === "string")).toBe(true);
  return { builder, runtime, entrypoint };
}

let dir: string;
let certPath: string;
beforeAll(() => {
  dir = mkdtempSync(join(tmpdir(), "mcpmgr-dockerfile-"));
  const made = Bun.spawnSync(
    [
      "openssl",
      "req",
      "-x509",
      "-newkey",
      "rsa:2048",
      "-nodes",
      "-subj",
      "/CN=test",
      "-days",
      "1",
      "-keyout",
      "k",
      "-out",
      "c",
    ],
    { cwd: dir, stdout: "ignore", stderr: "pipe" },
  );
  if (made.exitCode !== 0) throw new Error(`openssl failed: ${made.stderr.toString()}`);
  certPath = join(dir, "c");
});
afterAll(() => rmSync(dir, { recursive: true, force: true }));

/** A fresh project directory holding `files`. */
function project(name: string, files: Record<string, string>): string {
  const root = join(dir, name);
  for (const [path, content] of Object.entries(files)) {
    mkdirSync(join(root, path, ".."), { recursive: true });
    writeFileSync(join(root, path), content);
  }
  return root;
}

describe("generated Dockerfiles", () => {
  test("npx remote: npm installs name@version in the builder; node runs the resolved bin", () => {
    const { dockerfile } = prepareBuild(pkg("npx", "@scope/server", { version: "1.2.3" }), plain);
    const { builder, runtime, entrypoint } = checked(dockerfile, "node:22-alpine", "node:22-alpine");
    // Exec form: the spec is one JSON argument, never shell text.
    expect(builder).toContain(
      'RUN ["npm","install","--omit=dev","--no-audit","--no-fund","--prefix","/app","@scope/server@1.2.3"]',
    );
    expect(builder).toContain('RUN ["node","/app/mcpmgr-resolve-bin.cjs","/app/node_modules/@scope/server"]');
    expect(runtime).toContain("COPY --from=builder /app /app");
    expect(entrypoint).toEqual(["node", "/app/mcp-server"]);
  });

  test("npx local: the project is copied in, not fetched", () => {
    const root = project("npx-local", { "package.json": '{"name":"srv","bin":"index.js"}', "index.js": "" });
    const { dockerfile } = prepareBuild(pkg("npx", "./npx-local", { localPath: root }), plain);
    const { builder, entrypoint } = checked(dockerfile, "node:22-alpine", "node:22-alpine");
    expect(builder).toContain("COPY package/ /app/package/");
    expect(builder).toContain("RUN node /app/mcpmgr-resolve-bin.cjs /app/package");
    expect(builder.some((line) => line.startsWith("RUN npm install --omit=dev --no-audit --no-fund --prefix"))).toBe(
      false,
    );
    expect(entrypoint).toEqual(["node", "/app/mcp-server"]);
  });

  test("uvx remote: uv installs name==version; the entrypoint is the package's script", () => {
    const { dockerfile } = prepareBuild(pkg("uvx", "mcp-server-fetch", { version: "1.2.3" }), plain);
    const uv = "ghcr.io/astral-sh/uv:python3.12-alpine";
    const { builder, entrypoint } = checked(dockerfile, uv, uv);
    expect(builder).toContain('RUN ["uv","tool","install","mcp-server-fetch==1.2.3"]');
    expect(entrypoint).toEqual(["/opt/mcp/bin/mcp-server-fetch"]);
    expect(checked(prepareBuild(pkg("uvx", "tool[cli]"), plain).dockerfile, uv, uv).entrypoint).toEqual([
      "/opt/mcp/bin/tool",
    ]);
  });

  test("uvx local: the first [project.scripts] entry is the entrypoint", () => {
    const root = project("uvx-local", {
      "pyproject.toml": '[project]\nname = "srv"\n\n[project.scripts]\nmy-server = "srv:main"\nother = "srv:other"\n',
      "srv/__init__.py": "",
    });
    const source = pkg("uvx", "./uvx-local", { localPath: root });
    expect(dockerfileInput(source, plain)).toMatchObject({ local: true, localScript: "my-server" });
    const uv = "ghcr.io/astral-sh/uv:python3.12-alpine";
    const { builder, entrypoint } = checked(prepareBuild(source, plain).dockerfile, uv, uv);
    expect(builder).toContain("COPY package/ /src/");
    expect(builder).toContain("RUN uv tool install /src");
    expect(entrypoint).toEqual(["/opt/mcp/bin/my-server"]);
  });

  test("go remote: go install path@version (or @latest) in golang, the binary alone on alpine", () => {
    const { dockerfile } = prepareBuild(pkg("go", "github.com/org/srv/cmd/x", { version: "v1" }), plain);
    const { builder, runtime, entrypoint } = checked(dockerfile, "golang:1.24-alpine", "alpine:3.21");
    expect(builder).toContain('RUN ["go","install","-trimpath","github.com/org/srv/cmd/x@v1"]');
    expect(runtime).toContain("COPY --from=builder /out/mcp-server /usr/local/bin/mcp-server");
    expect(entrypoint).toEqual(["/usr/local/bin/mcp-server"]);
    const latest = checked(
      prepareBuild(pkg("go", "github.com/org/srv/cmd/x"), plain).dockerfile,
      "golang:1.24-alpine",
      "alpine:3.21",
    );
    expect(latest.builder).toContain('RUN ["go","install","-trimpath","github.com/org/srv/cmd/x@latest"]');
  });

  test("go local: go build in the copied module", () => {
    const root = project("go-local", {
      "go.mod": "module example.com/srv\n",
      "main.go": "package main\nfunc main() {}\n",
    });
    const { builder, entrypoint } = checked(
      prepareBuild(pkg("go", "./go-local", { localPath: root }), plain).dockerfile,
      "golang:1.24-alpine",
      "alpine:3.21",
    );
    expect(builder).toContain("COPY package/ /src/");
    expect(builder.some((line) => line.includes("go build -trimpath -o /out/mcp-server ."))).toBe(true);
    expect(builder.some((line) => line.includes("go install"))).toBe(false);
    expect(entrypoint).toEqual(["/usr/local/bin/mcp-server"]);
  });

  test.each(["npx", "uvx", "go"] as const)("%s: --runtime-image replaces both stages' base", (manager) => {
    const { dockerfile } = prepareBuild(pkg(manager, "srv"), {
      runtimeImage: "registry.local/base:1",
      addPackages: [],
    });
    checked(dockerfile, "registry.local/base:1", "registry.local/base:1");
    expect(dockerfile).not.toMatch(/alpine/);
  });

  test.each(["npx", "uvx", "go"] as const)("%s: --runtime-add-package installs in both stages", (manager) => {
    const { builder, runtime } = checked(
      prepareBuild(pkg(manager, "srv"), { runtimeImage: "base", addPackages: ["git", "ca-certificates"] }).dockerfile,
      "base",
      "base",
    );
    for (const stage of [builder, runtime]) {
      const install = stage.filter((line) => line.includes("apk add --no-cache git ca-certificates;"));
      expect(install).toHaveLength(1);
      expect(install[0]).toContain("apt-get install -y --no-install-recommends git ca-certificates");
    }
    const none = stages(prepareBuild(pkg(manager, "srv"), plain).dockerfile);
    expect([...none.builder, ...none.runtime].some((line) => line.includes("apk add"))).toBe(false);
  });

  test.each(["npx", "uvx", "go"] as const)(
    "%s: a CA certificate is copied and trusted in both stages, only when given",
    (manager) => {
      const withCa = prepareBuild(pkg(manager, "srv"), { addPackages: [], caCertPath: certPath });
      const { builder, runtime } = stages(withCa.dockerfile);
      for (const stage of [builder, runtime]) {
        expect(stage).toContain("COPY mcpmgr-ca.crt /usr/local/share/ca-certificates/mcpmgr-ca.crt");
        const env = stage.find((line) => line.startsWith("ENV NODE_EXTRA_CA_CERTS="));
        expect(env).toContain("SSL_CERT_FILE=/etc/ssl/certs/ca-certificates.crt");
        expect(env).toContain("REQUESTS_CA_BUNDLE=");
      }
      const caFile = withCa.files.find((file) => file.path === "mcpmgr-ca.crt");
      expect(String(caFile?.content)).toContain("-----BEGIN CERTIFICATE-----");

      const without = prepareBuild(pkg(manager, "srv"), plain);
      expect(without.dockerfile).not.toContain("mcpmgr-ca.crt");
      expect(without.dockerfile).not.toContain("NODE_EXTRA_CA_CERTS");
      expect(without.files.map((file) => file.path)).toEqual(["Dockerfile", "mcpmgr-resolve-bin.cjs"]);
    },
  );

  test("the runtime stage runs unprivileged with its own home", () => {
    const { runtime } = stages(generateDockerfile(dockerfileInput(pkg("npx", "srv"), plain)));
    expect(runtime).toContain("ENV HOME=/home/mcp");
    expect(runtime).toContain("WORKDIR /home/mcp");
    expect(runtime.filter((line) => line.startsWith("USER "))).toEqual(["USER root", "USER 10001:10001"]);
  });
});

describe("prepareBuild tags", () => {
  const tagPattern = /^mcpmgr-build\/(npx|uvx|go)-[a-z0-9._-]+:[0-9a-f]{16}$/;

  test("format mcpmgr-build/<manager>-<slug>:<16 hex>", () => {
    expect(prepareBuild(pkg("npx", "@scope/server", { version: "1.2.3" }), plain).tag).toMatch(
      /^mcpmgr-build\/npx-scope-server:[0-9a-f]{16}$/,
    );
    expect(prepareBuild(pkg("go", "github.com/Org/Srv"), plain).tag).toMatch(
      /^mcpmgr-build\/go-github-com-org-srv:[0-9a-f]{16}$/,
    );
    expect(prepareBuild(pkg("uvx", "mcp-server-fetch"), plain).tag).toMatch(tagPattern);
    const root = project("My Project", { "package.json": "{}" });
    expect(prepareBuild(pkg("npx", "./My Project", { localPath: root }), plain).tag).toMatch(
      /^mcpmgr-build\/npx-my-project:[0-9a-f]{16}$/,
    );
  });

  test("same inputs → same tag; any changed input → a different tag", () => {
    const source = pkg("npx", "srv", { version: "1.0.0" });
    const tag = prepareBuild(source, plain).tag;
    expect(prepareBuild({ ...source }, { addPackages: [] }).tag).toBe(tag);
    const others = [
      prepareBuild(pkg("npx", "srv", { version: "1.0.1" }), plain).tag,
      prepareBuild(source, { addPackages: ["git"] }).tag,
      prepareBuild(source, { addPackages: ["git", "curl"] }).tag,
      prepareBuild(source, { addPackages: [], runtimeImage: "node:20" }).tag,
      prepareBuild(source, { addPackages: [], caCertPath: certPath }).tag,
    ];
    expect(new Set([tag, ...others]).size).toBe(others.length + 1);
  });

  test("a local project: a changed file changes the tag; node_modules and .git do not", () => {
    const root = project("tagged", {
      "package.json": '{"name":"tagged"}',
      "index.js": "console.log(1)",
      "node_modules/dep/index.js": "a",
      ".git/HEAD": "ref: refs/heads/main",
    });
    const source = pkg("npx", "./tagged", { localPath: root });
    const first = prepareBuild(source, plain);
    expect(first.files.map((file) => file.path)).toEqual([
      "Dockerfile",
      "mcpmgr-resolve-bin.cjs",
      "package/index.js",
      "package/package.json",
    ]);

    writeFileSync(join(root, "node_modules/dep/index.js"), "b");
    writeFileSync(join(root, "node_modules/new.js"), "new");
    writeFileSync(join(root, ".git/HEAD"), "ref: refs/heads/other");
    expect(prepareBuild(source, plain).tag).toBe(first.tag);

    writeFileSync(join(root, "index.js"), "console.log(2)");
    const changed = prepareBuild(source, plain).tag;
    expect(changed).not.toBe(first.tag);
    writeFileSync(join(root, "extra.js"), "");
    expect(prepareBuild(source, plain).tag).not.toBe(changed);
  });

  test("bad add-packages are refused before anything else", async () => {
    await rejection(
      attempt(() => prepareBuild(pkg("npx", "srv"), { addPackages: ["git", "curl; rm -rf /"] })),
      "INVALID_OPTION",
    );
  });

  // BUG (src/runtime/docker/image-build.ts prepareBuild): the slug may end in '-' or '.', which
  // is not a valid image reference ("invalid reference format" from the engine's build API).
  test("the tag is a valid image reference for a uvx package with extras", () => {
    const reference =
      /^[a-z0-9]+(?:(?:[._]|__|-+)[a-z0-9]+)*(?:\/[a-z0-9]+(?:(?:[._]|__|-+)[a-z0-9]+)*)*:[\w][\w.-]{0,127}$/;
    expect(prepareBuild(pkg("uvx", "mcp-server-fetch"), plain).tag).toMatch(reference);
    expect(prepareBuild(pkg("uvx", "mcp-server-fetch[cli]"), plain).tag).toMatch(reference);
  });
});

describe("validateAddPackages", () => {
  test("accepts OS package names, optionally with a version", () => {
    expect(() =>
      validateAddPackages(["git", "ca-certificates", "py3-pip", "libfoo=1.2-r0", "g++", "libstdc++6"]),
    ).not.toThrow();
    expect(() => validateAddPackages([])).not.toThrow();
  });

  test.each(["curl; rm -rf /", "-x", "", "git curl", "$(id)", "Git", "a=", "pkg`x`"])("refuses %p", async (name) => {
    await rejection(
      attempt(() => validateAddPackages(["git", name])),
      "INVALID_OPTION",
    );
  });
});

describe("readCaCert", () => {
  const pem = () => readFileSync(certPath, "utf8");
  const write = (name: string, text: string) => {
    const path = join(dir, name);
    writeFileSync(path, text);
    return path;
  };

  test("a real certificate is returned as its PEM blocks, surrounding text dropped", () => {
    expect(readCaCert(certPath)).toBe(`${pem().trim()}\n`);
    const bundle = readCaCert(write("bundle.pem", `# corporate CA\n${pem()}\nsome text\n${pem()}`));
    expect(bundle.match(/-----BEGIN CERTIFICATE-----/g)).toHaveLength(2);
    expect(bundle).not.toContain("corporate");
  });

  test("no PEM block is INVALID_OPTION", async () => {
    await rejection(
      attempt(() => readCaCert(write("empty.pem", "just some text\n"))),
      "INVALID_OPTION",
    );
    await rejection(
      attempt(() => readCaCert(join(dir, "k"))),
      "INVALID_OPTION",
    );
  });

  test("a truncated or garbled certificate is INVALID_OPTION, even next to a good one", async () => {
    const lines = pem().trim().split("\n");
    const truncated = [...lines.slice(0, 6), lines.at(-1)].join("\n");
    const garbled = [lines[0], "bm90IGEgY2VydGlmaWNhdGUgYXQgYWxs", lines.at(-1)].join("\n");
    await rejection(
      attempt(() => readCaCert(write("truncated.pem", truncated))),
      "INVALID_OPTION",
    );
    await rejection(
      attempt(() => readCaCert(write("garbled.pem", garbled))),
      "INVALID_OPTION",
    );
    await rejection(
      attempt(() => readCaCert(write("mixed.pem", `${pem()}\n${garbled}\n`))),
      "INVALID_OPTION",
    );
  });

  test("a missing file is INVALID_OPTION", async () => {
    await rejection(
      attempt(() => readCaCert(join(dir, "missing.pem"))),
      "INVALID_OPTION",
    );
    await rejection(
      attempt(() => prepareBuild(pkg("npx", "srv"), { addPackages: [], caCertPath: join(dir, "missing.pem") })),
      "INVALID_OPTION",
    );
  });
});

test("files hidden by .mcpmgrignore or the global patterns stay out of a local project's image", () => {
  const root = mkdtempSync(join(tmpdir(), "mcpmgr-build-ignore-"));
  try {
    writeFileSync(join(root, "package.json"), JSON.stringify({ name: "p", bin: "index.js" }));
    writeFileSync(join(root, "index.js"), "");
    writeFileSync(join(root, ".mcpmgrignore"), "secret.env\nprivate/\n");
    writeFileSync(join(root, "secret.env"), "TOKEN=1");
    writeFileSync(join(root, ".npmrc"), "//registry/:_authToken=x");
    mkdirSync(join(root, "private"));
    writeFileSync(join(root, "private", "key.pem"), "KEY");
    const source = pkg("npx", "./p", { localPath: root });
    const paths = prepareBuild(source, { ...plain, ignorePatterns: [".npmrc"] }).files.map((f) => f.path);
    expect(paths).toContain("package/index.js");
    expect(paths).not.toContain("package/secret.env");
    expect(paths).not.toContain("package/private/key.pem");
    expect(paths).not.toContain("package/.npmrc");
    expect(prepareBuild(source, plain).files.map((f) => f.path)).toContain("package/.npmrc");
  } finally {
    rmSync(root, { recursive: true, force: true });
  }
});
