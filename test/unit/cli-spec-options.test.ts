/**
 * The option tables (and the help built from them) against the options the interface
 * spec declares: same names, short forms, kinds, repeatability and defaults.
 */
import { beforeAll, describe, expect, test, setDefaultTimeout } from "bun:test";
import { resolve } from "node:path";
import * as v from "valibot";
import type { OptionSpec, OptionTable } from "../../src/config/option-spec.ts";
import { proxyOptions } from "../../src/config/proxy-options.ts";
import { runOptions } from "../../src/config/run-options.ts";
import {
  helpOption,
  proxySpecOptions,
  runOutgoingAuthOptions,
  runSpecOptions,
  type SpecOption,
} from "../fixtures/spec-options.ts";

// Real processes and servers: more than bun's 5 s on a loaded machine (the preload's default
// reaches only the first file of a run).
setDefaultTimeout(60_000);

const REPO_ROOT = resolve(import.meta.dir, "../..");

/** Options the tables declare beyond the spec, on purpose. A new one must be added here knowingly. */
const proxyExtensions = [
  "endpoint-prefix",
  "trust-proxy-headers",
  // Review 7 (R7-M2): the host names a listener beyond loopback answers to (DNS rebinding).
  "allowed-hosts",
  // Review 7: the form of the introspection secret a background workload may record.
  "oidc-client-secret-file",
  "oidc-insecure-allow-http",
  "jwks-allow-private-ip",
  "jwks-auth-token-file",
  // The deliberate way to send mcpmgr's credentials to a plain http:// remote beyond loopback.
  "remote-insecure-allow-http",
  "thv-ca-bundle",
];
const runExtensions: string[] = [
  "allowed-hosts",
  "allow-registry-mount",
  "insecure-allow-unsandboxed",
  "oidc-client-secret-file",
  "remote-insecure-allow-http",
];

/** A sample value per typed kind and what the option's schema must turn it into. */
const typeSamples: Partial<Record<SpecOption["type"], { text: string; value: unknown; bad: string }>> = {
  integer: { text: "8080", value: 8080, bad: "80x" },
  float: { text: "0.25", value: 0.25, bad: "a quarter" },
  duration: { text: "2m30s", value: 150_000, bad: "forever" },
  "string list": { text: "a, b", value: ["a", "b"], bad: "" },
};

function checkAgainstSpec(table: OptionTable, expected: SpecOption): void {
  const actual = table[expected.name] as OptionSpec | undefined;
  expect(actual, `--${expected.name} is declared`).toBeDefined();
  if (actual === undefined) return;

  expect(actual.short, `short form of --${expected.name}`).toBe(expected.short);
  expect(actual.kind, `kind of --${expected.name}`).toBe(expected.type === "boolean" ? "boolean" : "string");
  expect(actual.kind === "string" && actual.repeatable, `--${expected.name} repeatable`).toBe(expected.repeatable);

  // Applied defaults must match; an option without one in the spec must not invent one
  // (booleans always have one, and the spec states it for every boolean).
  expect(actual.default, `default of --${expected.name}`).toEqual(expected.default);
  if (expected.defaultText === undefined) {
    expect(actual.defaultText, `described default of --${expected.name}`).toBeUndefined();
  } else {
    expect(actual.defaultText, `described default of --${expected.name}`).toBeString();
    for (const word of expected.defaultText) {
      expect(actual.defaultText?.toLowerCase(), `described default of --${expected.name}`).toContain(
        word.toLowerCase(),
      );
    }
  }

  const sample = typeSamples[expected.type];
  if (sample !== undefined && actual.kind === "string") {
    expect(v.parse(actual.schema, sample.text), `--${expected.name} parses as ${expected.type}`).toEqual(sample.value);
    expect(
      v.safeParse(actual.schema, sample.bad).success,
      `--${expected.name} rejects ${JSON.stringify(sample.bad)}`,
    ).toBe(false);
  }
}

describe("the spec fixture", () => {
  test.each([
    ["run", runSpecOptions],
    ["proxy", proxySpecOptions],
  ] as const)("%s lists each option once", (_command, options) => {
    const names = options.map((option) => option.name);
    expect(new Set(names).size).toBe(names.length);
  });

  test("run includes every --token-exchange-* option of proxy", () => {
    const proxyTokenExchange = proxySpecOptions.filter((o) => o.name.startsWith("token-exchange-")).map((o) => o.name);
    expect(proxyTokenExchange).toHaveLength(8);
    expect(runSpecOptions.map((o) => o.name)).toEqual(expect.arrayContaining(proxyTokenExchange));
  });
});

describe("runOptions matches the spec", () => {
  test.each(runSpecOptions.map((option) => [option.name, option] as const))("--%s", (_name, option) => {
    checkAgainstSpec(runOptions, option);
  });

  test("declares nothing beyond the spec except known extensions", () => {
    const specNames = new Set(runSpecOptions.map((o) => o.name));
    expect(Object.keys(runOptions).filter((name) => !specNames.has(name))).toEqual(runExtensions);
  });

  test.each(runOutgoingAuthOptions.map((option) => [option.name] as const))(
    "--%s is the same declaration as on proxy",
    (name) => {
      expect(runOptions[name as keyof typeof runOptions]).toBe(
        proxyOptions[name as keyof typeof proxyOptions] as never,
      );
    },
  );
});

describe("proxyOptions matches the spec", () => {
  test.each(proxySpecOptions.map((option) => [option.name, option] as const))("--%s", (_name, option) => {
    checkAgainstSpec(proxyOptions, option);
  });

  test("declares nothing beyond the spec except known extensions", () => {
    const specNames = new Set(proxySpecOptions.map((o) => o.name));
    expect(Object.keys(proxyOptions).filter((name) => !specNames.has(name))).toEqual(proxyExtensions);
  });
});

test.each([
  ["run", runOptions],
  ["proxy", proxyOptions],
] as const)("%s leaves -h and --help to the CLI", (_command, table) => {
  expect(Object.keys(table)).not.toContain(helpOption.name);
  expect(Object.values(table).map((spec) => spec.short)).not.toContain(helpOption.short);
});

function cli(...args: string[]) {
  const env: Record<string, string | undefined> = { ...process.env, NO_COLOR: "1" };
  delete env.FORCE_COLOR;
  const result = Bun.spawnSync([process.execPath, "src/main.ts", ...args], {
    cwd: REPO_ROOT,
    env,
    stdout: "pipe",
    stderr: "pipe",
  });
  return { exitCode: result.exitCode, stdout: result.stdout.toString(), stderr: result.stderr.toString() };
}

/** `--host` must not be satisfied by `--target-host`. */
function mentions(help: string, option: SpecOption): boolean {
  const long = `--${option.name}`.replace(/[-]/g, "\\-");
  const pattern =
    option.short === undefined ? `(^|[\\s,])${long}(?=[=\\s]|$)` : `(^|\\s)-${option.short}, ${long}(?=[=\\s]|$)`;
  return new RegExp(pattern, "m").test(help);
}

describe.each([
  ["run", runSpecOptions],
  ["proxy", proxySpecOptions],
] as const)("%s --help", (command, options) => {
  let help: ReturnType<typeof cli>;
  beforeAll(() => {
    help = cli(command, "--help");
  });

  test("exits 0 with the help on stdout", () => {
    expect(help.exitCode).toBe(0);
    expect(help.stderr).toBe("");
    expect(help.stdout).toContain(`mcpmgr ${command}`);
    expect(help.stdout).not.toMatch(/\u001b\[/);
  });

  test("mentions every option of the spec", () => {
    const missing = options.filter((option) => !mentions(help.stdout, option)).map((o) => `--${o.name}`);
    expect(missing).toEqual([]);
  });

  test("-h prints the same help", () => {
    const short = cli(command, "-h");
    expect(short.exitCode).toBe(0);
    expect(short.stdout).toBe(help.stdout);
  });

  // The spec lists `-h, --help` among the options of run and proxy.
  test("lists -h, --help among the options", () => {
    expect(mentions(help.stdout, helpOption)).toBe(true);
  });

  test("every secret given as a value warns of the process list in the same words (review 9, F16)", () => {
    const table: OptionTable = command === "run" ? runOptions : proxyOptions;
    // A secret or token option with a -file form: its value is in /proc/PID/cmdline for the whole run.
    const literal = Object.keys(table).filter((name) => /secret|token/.test(name) && `${name}-file` in table);
    expect(literal.sort()).toEqual([
      "oidc-client-secret",
      "remote-auth-bearer-token",
      "remote-auth-client-secret",
      "token-exchange-client-secret",
    ]);
    for (const name of literal) {
      const words = `(not recommended: visible in the process list; prefer --${name}-file)`;
      expect((table[name] as OptionSpec).description).toEndWith(words);
      expect(help.stdout.replace(/\s+/g, " ")).toContain(words);
    }
  });
});
