/** redact() and the Secret wrapper: a value never leaks through the usual ways of printing an object. */
import { describe, expect, test, setDefaultTimeout } from "bun:test";
import { format, inspect } from "node:util";
import {
  collectingRedactor,
  COLLECTED_HARD_COUNT,
  COLLECTED_IN_FLIGHT_MS,
  COLLECTED_KEEP_COUNT,
  learningRedactor,
  MIN_REDACT_LENGTH,
  REDACTED,
  RETIRED_KEEP_COUNT,
  RETIRED_KEEP_MS,
  redact,
  redactor,
  Secret,
} from "../../src/secrets/redact.ts";

// Real processes and servers: more than bun's 5 s on a loaded machine (the preload's default
// reaches only the first file of a run).
setDefaultTimeout(60_000);

const VALUE = "sk-live-0123456789abcdef";

describe("redact", () => {
  test("replaces every occurrence of every known value", () => {
    expect(redact(`token=${VALUE} again ${VALUE}; pw=hunter2!`, [VALUE, "hunter2!"])).toBe(
      `token=${REDACTED} again ${REDACTED}; pw=${REDACTED}`,
    );
  });

  test("accepts Secret wrappers", () => {
    expect(redact(`Authorization: Bearer ${VALUE}`, [new Secret(VALUE)])).toBe(`Authorization: Bearer ${REDACTED}`);
  });

  test(`values shorter than ${MIN_REDACT_LENGTH} characters are left alone`, () => {
    expect(redact("a 1 ab abc abcd", ["a", "ab", "abc", "abcd", ""])).toBe(`a 1 ab abc ${REDACTED}`);
  });

  test("a value containing another is removed whole", () => {
    expect(redact("prefix-secret-suffix", ["secret", "prefix-secret-suffix"])).toBe(REDACTED);
    expect(redact("secret-and-more", ["secret", "secret-and-more"])).toBe(REDACTED);
  });

  test("regular-expression characters are matched literally", () => {
    expect(redact("x (a+b)*[c] y a+bbb", ["(a+b)*[c]"])).toBe(`x ${REDACTED} y a+bbb`);
  });

  test("a value in its JSON spellings: escaped once, twice, and with non-ASCII as \\u escapes (Python's json)", () => {
    const value = 'pa"ss\\wörd\tend';
    const once = JSON.stringify(value).slice(1, -1);
    const twice = JSON.stringify(once).slice(1, -1);
    const python = once.replace("ö", "\\u00f6");
    for (const spelling of [value, once, twice, python]) {
      expect(redact(`config ${spelling} done`, [value])).toBe(`config ${REDACTED} done`);
      expect(redactor([new Secret(value)])(`config ${spelling} done`)).toBe(`config ${REDACTED} done`);
    }
    expect(redact(JSON.stringify({ env: JSON.stringify({ TOKEN: value }) }), [value])).not.toContain("end");
  });

  test("a value with < > & as Go's encoding/json writes it (\\u0026), also inside an audit line's JSON", () => {
    const value = "a&b<c>d-é-x";
    // What json.Marshal(map[string]string{"TOKEN": value}) prints (Go 1.2x): HTML-safe escapes, UTF-8 kept.
    const goLine = '{"TOKEN":"a\\u0026b\\u003cc\\u003ed-é-x"}';
    expect(redact(`config ${goLine}`, [value])).toBe(`config {"TOKEN":"${REDACTED}"}`);
    expect(redactor([new Secret(value)])(JSON.stringify({ text: goLine }))).not.toContain("u0026b");
  });

  test("each line of a multi-line value, which a server may print one write at a time", () => {
    const key =
      "-----BEGIN KEY-----\r\nMIIEvQIBADANBgkqhkiG9w0BAQEFAASC\r\nb3BlbnNzaC1rZXktdjEAAAAABG5vbmUA\r\n-----END KEY-----";
    expect(redact("MIIEvQIBADANBgkqhkiG9w0BAQEFAASC\n", [key])).toBe(`${REDACTED}\n`);
    expect(redact("b3BlbnNzaC1rZXktdjEAAAAABG5vbmUA", [key])).toBe(REDACTED);
    expect(redact(key, [key])).toBe(REDACTED);
    // Lines too short to be told from ordinary text are left, as short values are.
    expect(redact("a {\n}", ['{\n  "k": "v-0123456789"\n}'])).toBe("a {\n}");
  });

  test("a line of a multi-line value that is only indentation and punctuation is not a spelling of it", () => {
    // A credentials file written with 4-space indents: its "    }," and blank indented lines are in
    // every pretty-printed JSON a server logs, and in any indented text.
    const credentials =
      '{\n    "type": "service_account",\n    "nested": {\n        "a": "b"\n    },\n    \n    "k": "v-0123"\n}';
    const logged = '{\n    "result": {\n        "ok": true\n    },\n    "x": 1\n}';
    expect(redact(logged, [credentials])).toBe(logged);
    expect(redactor([credentials])("    indented    text")).toBe("    indented    text");
    // Its lines that say something are still found, whatever their indentation in the output.
    expect(redact('  "type": "service_account",', [credentials])).toBe(`  ${REDACTED}`);
  });

  test("no values, text unchanged; redactor binds a set", () => {
    expect(redact("nothing to hide", [])).toBe("nothing to hide");
    const scrub = redactor([VALUE]);
    expect(scrub(`got ${VALUE}`)).toBe(`got ${REDACTED}`);
  });
});

describe("Secret", () => {
  const secret = new Secret(VALUE);

  test("reveal() is the only way out", () => {
    expect(secret.reveal()).toBe(VALUE);
  });

  test("template strings, String() and concatenation", () => {
    expect(`${secret}`).toBe("[secret]");
    expect(String(secret)).toBe("[secret]");
    expect(`x${secret}`).toBe("x[secret]");
    expect(secret.toString()).toBe("[secret]");
  });

  test("JSON.stringify, alone and nested", () => {
    expect(JSON.stringify(secret)).toBe('"[secret]"');
    const nested = JSON.stringify({ env: { TOKEN: secret }, list: [secret] });
    expect(nested).not.toContain(VALUE);
    expect(nested).toContain("[secret]");
  });

  test("console / Bun.inspect / util.inspect / util.format", () => {
    for (const text of [
      Bun.inspect(secret),
      Bun.inspect({ nested: { secret } }),
      inspect(secret),
      inspect({ deep: [secret] }, { showHidden: true, depth: 10 }),
      format("%s %o %O %j", secret, secret, secret, secret),
    ]) {
      expect(text).not.toContain(VALUE);
      expect(text).toContain("[secret]");
    }
  });

  test("console.log in a child process prints [secret]", () => {
    const script = `import { Secret } from ${JSON.stringify(`${import.meta.dir}/../../src/secrets/redact.ts`)};
const s = new Secret(${JSON.stringify(VALUE)});
console.log(s); console.log({ s }); console.error("%s", s); console.log([s], new Map([["k", s]]));`;
    const result = Bun.spawnSync([process.execPath, "-e", script], { stdout: "pipe", stderr: "pipe" });
    const out = result.stdout.toString() + result.stderr.toString();
    expect(result.exitCode).toBe(0);
    expect(out).toContain("[secret]");
    expect(out).not.toContain(VALUE);
  });

  test("nothing enumerable, nothing copied by spread, keys, entries or structuredClone", () => {
    expect(Object.keys(secret)).toEqual([]);
    expect(Object.getOwnPropertyNames(secret)).toEqual([]);
    expect(Reflect.ownKeys(secret)).toEqual([]);
    expect(JSON.stringify({ ...secret })).toBe("{}");
    expect(JSON.stringify(Object.entries(secret))).toBe("[]");
    const cloned = structuredClone(secret) as unknown;
    expect(Bun.inspect(cloned)).not.toContain(VALUE);
    for (const key in secret) throw new Error(`enumerable key ${key}`);
  });

  test("errors carrying a Secret do not show it", () => {
    const err = new Error(`failed with ${secret}`, { cause: secret });
    expect(Bun.inspect(err)).not.toContain(VALUE);
    expect(err.message).not.toContain(VALUE);
  });

  test("Secret.from keeps wrappers and wraps strings", () => {
    expect(Secret.from(secret)).toBe(secret);
    expect(Secret.from("plain-abc").reveal()).toBe("plain-abc");
  });
});

test("a value is found percent-encoded too, as a URL or a form quotes it", () => {
  const key = "k3y+/with=base64@chars";
  const echoed = `GET /callback?key=${encodeURIComponent(key)}&next=1`;
  expect(redact(echoed, [key])).toBe("GET /callback?key=***&next=1");
  expect(redactor([key])(JSON.stringify({ url: echoed }))).not.toContain(encodeURIComponent(key));
});

test("a value is found as .NET's and PHP's JSON writers escape it, and so written inside an audit line", () => {
  const key = "kT0x+9aB/Qw==";
  const password = `p"ss'wörd&<x>`;
  const scrub = redactor([key, password]);
  // System.Text.Json's default encoder (the C# MCP SDK's servers): `+`, quotes, `&<>` and non-ASCII in upper-case hex.
  const dotnet = String.raw`{"Key":"kT0x\u002B9aB/Qw==","Password":"p\u0022ss\u0027w\u00F6rd\u0026\u003Cx\u003E"}`;
  // PHP's json_encode: `/` as `\/`, non-ASCII in lower-case hex.
  const php = String.raw`{"key":"kT0x+9aB\/Qw==","password":"p\"ss'w\u00f6rd&<x>"}`;
  expect(scrub(dotnet)).toBe(`{"Key":"${REDACTED}","Password":"${REDACTED}"}`);
  expect(scrub(php)).toBe(`{"key":"${REDACTED}","password":"${REDACTED}"}`);
  // A tool's answer quoting that log line, in an audit line's JSON.
  expect(scrub(JSON.stringify({ text: dotnet }))).not.toMatch(/kT0x|ss\\u0027w/);
  expect(scrub(JSON.stringify({ text: php }))).not.toMatch(/kT0x|u00f6rd/);
});

test("a learning redactor redacts the values learned, and those they replaced for an hour (8 at most)", () => {
  let now = 0;
  const learning = learningRedactor(["fixed-secret"], () => now);
  learning.learn(["access-1", "refresh-1"]);
  expect(learning.redact("fixed-secret access-1 refresh-1")).toBe("*** *** ***");
  now = 1_000;
  learning.learn(["access-2", "refresh-1"]);
  expect(learning.redact("access-1 access-2 refresh-1")).toBe("*** *** ***");
  now = 1_000 + RETIRED_KEEP_MS;
  learning.learn(["access-3", "refresh-1"]);
  // access-1 was replaced an hour ago: gone; access-2 only now.
  expect(learning.redact("access-1 access-2 access-3 fixed-secret")).toBe("access-1 *** *** ***");
  for (let i = 4; i < 4 + RETIRED_KEEP_COUNT + 1; i++) learning.learn([`access-${i}`]);
  const kept = learning.redact(Array.from({ length: 13 }, (_, i) => `access-${i}`).join(" "));
  expect(kept.split(" ").filter((word) => word === REDACTED)).toHaveLength(RETIRED_KEEP_COUNT + 1);
});

test("a collecting redactor keeps every value in use, each for an hour after its last use (the least recently used go first)", () => {
  let now = 0;
  const collecting = collectingRedactor(["fixed-secret"], () => now);
  collecting.add("token-a");
  collecting.add("token-b");
  expect(collecting.redact("fixed-secret token-a token-b")).toBe("*** *** ***");
  now = RETIRED_KEEP_MS - 1;
  collecting.add("token-a"); // still in use: its hour starts again
  now = RETIRED_KEEP_MS;
  collecting.add("token-c");
  // token-b was last used an hour ago: gone; token-a used since.
  expect(collecting.redact("token-a token-b token-c fixed-secret")).toBe("*** token-b *** ***");
  // Then, once they are no longer in flight, many new ones.
  now += COLLECTED_IN_FLIGHT_MS;
  for (let i = 0; i < COLLECTED_KEEP_COUNT; i++) collecting.add(`many-${i}`);
  // The cap pushed out the two older ones, not the ones added since.
  expect(collecting.redact("token-a token-c many-0 fixed-secret")).toBe("token-a token-c *** ***");
});

test("a collecting redactor keeps a value used in the last minutes however many clients come after it (its answer may be on its way)", () => {
  let now = 0;
  const collecting = collectingRedactor([], () => now);
  collecting.add("token-in-flight");
  now = 60_000;
  // A flood of new clients while the first one's call is still running.
  for (let i = 0; i < COLLECTED_KEEP_COUNT + 10; i++) collecting.add(`flood-${i}`);
  expect(collecting.redact("echo: token-in-flight")).toBe("echo: ***");
  // Once it is no longer in flight, the cap applies to it again.
  now = COLLECTED_IN_FLIGHT_MS + 1;
  collecting.add("one-more");
  // (the flood's values, used a minute later, are still in flight themselves)
  expect(collecting.redact("token-in-flight flood-0 one-more")).toBe("token-in-flight *** ***");
  // However recent, no more than the hard cap.
  for (let i = 0; i < COLLECTED_HARD_COUNT; i++) collecting.add(`burst-${i}`);
  expect(collecting.redact("one-more burst-0")).toBe("one-more ***");
});

test("a collecting redactor learns a new value without working out spellings (audit data off pays nothing for it)", () => {
  const collecting = collectingRedactor([]);
  const jwt = (i: number) => `eyJhbGciOiJSUzI1NiJ9.${String(i).padStart(6, "0")}${"x".repeat(300)}.${"s".repeat(86)}`;
  const startedAt = performance.now();
  for (let i = 0; i < 3000; i++) collecting.add(jwt(i));
  // Working the spellings out at each new value took about a millisecond each with 256 kept.
  expect(performance.now() - startedAt).toBeLessThan(1000);
  expect(collecting.redact(`a ${jwt(0)} b ${jwt(2999)}`)).toBe("a *** b ***");
});
