/**
 * The browser an OAuth login opens is given a one-time link to mcpmgr's callback server, never
 * the authorization URL: a command line is every local user's to read, and that URL's `state` and
 * `code_challenge` let another user log in as themselves and hand mcpmgr their code. The browser
 * is `xdg-open` found first on PATH, a script that records what it was asked to open (the browser
 * is not what is tested); the authorization server is a real oidc-provider, the remote
 * `mcpmgr proxy --oidc-*` in front of the conformance fixture.
 */
import { afterAll, beforeAll, expect, setDefaultTimeout, test } from "bun:test";
import { readFileSync } from "node:fs";
import { chmod, mkdtemp, rm, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { CALLBACK_PORTS, completeLogin, loginUrls } from "../support/auth-server.ts";
import { publicLogin, startProtectedRemote, until, type ProtectedRemote } from "../support/protected-remote.ts";
import { CLI_ENTRY, REPO_ROOT } from "../support/processes.ts";

setDefaultTimeout(90_000);

let setup: ProtectedRemote;
let scratch: string;

beforeAll(async () => {
  setup = await startProtectedRemote("mcpmgr-login-link-");
  scratch = await mkdtemp(join(tmpdir(), "mcpmgr-login-link-bin-"));
  await writeFile(join(scratch, "xdg-open"), `#!/bin/sh\nprintf '%s\\n' "$1" >> "${join(scratch, "opened")}"\n`);
  await chmod(join(scratch, "xdg-open"), 0o755);
}, 60_000);

afterAll(async () => {
  await setup?.stop();
  await rm(scratch, { recursive: true, force: true });
});

/** `mcpmgr proxy` logging in to the remote as the public client, with the browser opened (the recording script). */
async function loggingIn(home: string, timeout = "60s", { browser = true } = {}) {
  await rm(join(scratch, "opened"), { force: true });
  const proc = Bun.spawn(
    [
      process.execPath,
      CLI_ENTRY,
      "proxy",
      "linked",
      "--target-uri",
      setup.remote.url,
      ...publicLogin(setup, CALLBACK_PORTS[2], timeout, { browser }),
    ],
    {
      cwd: REPO_ROOT,
      env: { ...process.env, NO_COLOR: "1", MCPMGR_HOME: home, PATH: `${scratch}:${process.env.PATH}` },
      stdin: "ignore",
      stdout: "pipe",
      stderr: "pipe",
    },
  );
  let output = "";
  const drain = async (stream: ReadableStream<Uint8Array>) => {
    for await (const chunk of stream) output += new TextDecoder().decode(chunk);
  };
  void drain(proc.stdout);
  void drain(proc.stderr);
  const opened = browser
    ? await until(() => {
        try {
          return readFileSync(join(scratch, "opened"), "utf8").trim() || undefined;
        } catch {
          return undefined;
        }
      }, "the browser to be opened")
    : // Without a browser, the user pastes the printed authorization URL.
      await until(() => loginUrls(output)[0], "the printed login URL");
  return { proc, output: () => output, opened };
}

test("the browser gets a one-time link; one who opens it first and logs in as themselves is stopped", async () => {
  const home = await mkdtemp(join(scratch, "home-"));
  const { proc, output, opened } = await loggingIn(home);
  try {
    // Nothing on the browser's command line that another user could log in with.
    expect(opened).toMatch(new RegExp(`^http://127\\.0\\.0\\.1:${CALLBACK_PORTS[2]}/login/[\\w-]{32}$`));
    expect(opened).not.toContain("state=");
    expect(opened).not.toContain("code_challenge");
    // Another program read the link and opens it first: it is led to the authorization server.
    const first = await fetch(opened, { redirect: "manual" });
    expect(first.status).toBe(302);
    const authorize = first.headers.get("location") ?? "";
    expect(authorize).toStartWith(`${setup.auth.issuer}/auth?`);
    // It logs in as its own user at once and hands mcpmgr the code: the answer is taken, and held.
    expect(await completeLogin(authorize, "mallory")).toBe(200);
    // The browser opens the link late: the login stops, mallory's code is never redeemed.
    const late = await fetch(opened);
    expect(await late.text()).toContain("opened before");
    expect(await proc.exited).not.toBe(0);
    expect(output()).toContain("the OAuth login was stopped: its one-time link was opened twice");
    expect(output()).not.toMatch(/^http:\/\/127\.0\.0\.1:\d+\/mcp$/m);
    expect(setup.auth.grants.get("authorization_code") ?? 0).toBe(0);
  } finally {
    proc.kill("SIGKILL");
  }
});

test("the browser that opens the link logs in as before", async () => {
  const home = await mkdtemp(join(scratch, "home-"));
  const redeemed = setup.auth.grants.get("authorization_code") ?? 0;
  const { proc, output, opened } = await loggingIn(home);
  try {
    // The user's browser: the link, then the authorization server's pages, then the callback.
    expect(await completeLogin(opened, "alice")).toBe(200);
    await until(() => /^http:\/\/127\.0\.0\.1:\d+\/mcp$/m.exec(output())?.[0], "the proxy's client URL", 30_000);
    expect(setup.auth.grants.get("authorization_code")).toBe(redeemed + 1);
  } finally {
    proc.kill("SIGTERM");
    await proc.exited;
  }
});

test("the user reloading the page the answer arrived on, while it is held, does not stop the login", async () => {
  const home = await mkdtemp(join(scratch, "home-"));
  const redeemed = setup.auth.grants.get("authorization_code") ?? 0;
  const { proc, output, opened } = await loggingIn(home);
  try {
    let answer: string | undefined;
    const browser = async (url: string, init?: RequestInit) => {
      const response = await fetch(url, init);
      const location = response.headers.get("location");
      if (location?.includes("/callback?")) answer = new URL(location, url).href;
      return response;
    };
    const openedAt = performance.now();
    expect(await completeLogin(opened, "alice", browser)).toBe(200);
    // The same answer again, as a reload sends it: within the hold (the link was opened just now).
    const reload = await fetch(answer ?? "");
    expect(performance.now() - openedAt).toBeLessThan(5_000);
    expect(await reload.text()).toContain("received the authorization server's answer");
    const outcome = await until(
      () => /^http:\/\/127\.0\.0\.1:\d+\/mcp$|the OAuth login was stopped/m.exec(output())?.[0],
      "the proxy's client URL or the login's end",
      30_000,
    );
    expect(outcome).toStartWith("http://127.0.0.1:");
    expect(setup.auth.grants.get("authorization_code")).toBe(redeemed + 1);
  } finally {
    proc.kill("SIGTERM");
    await proc.exited;
  }
});

test("a login answered in time is not failed by the hold: a timeout shorter than the hold ends only the wait for the answer", async () => {
  const home = await mkdtemp(join(scratch, "home-"));
  const redeemed = setup.auth.grants.get("authorization_code") ?? 0;
  // 3 s to answer, less than the 5 s an answer is held after the link's first opening.
  const { proc, output, opened } = await loggingIn(home, "3s");
  try {
    // The user's browser opens the link and logs in at once: the answer arrives well within the 3 s.
    const openedAt = performance.now();
    expect(await completeLogin(opened, "alice")).toBe(200);
    expect(performance.now() - openedAt).toBeLessThan(3_000);
    const outcome = await until(
      () => /^http:\/\/127\.0\.0\.1:\d+\/mcp$|did not complete within|the OAuth login was stopped/m.exec(output())?.[0],
      "the proxy's client URL or the login's end",
      30_000,
    );
    expect(outcome).toStartWith("http://127.0.0.1:");
    // Held to the end of the 5 s, then redeemed.
    expect(performance.now() - openedAt).toBeGreaterThanOrEqual(5_000);
    expect(setup.auth.grants.get("authorization_code")).toBe(redeemed + 1);
  } finally {
    proc.kill("SIGTERM");
    await proc.exited;
  }
});

test("a login without the browser (--remote-auth-skip-browser: no link opened) is not held", async () => {
  const home = await mkdtemp(join(scratch, "home-"));
  const redeemed = setup.auth.grants.get("authorization_code") ?? 0;
  const { proc, output, opened } = await loggingIn(home, "60s", { browser: false });
  try {
    expect(opened).toStartWith(`${setup.auth.issuer}/auth?`);
    const answeredAt = performance.now();
    expect(await completeLogin(opened, "alice")).toBe(200);
    await until(() => /^http:\/\/127\.0\.0\.1:\d+\/mcp$/m.exec(output())?.[0], "the proxy's client URL", 30_000);
    // Nothing held it for 5 s: only the code's redemption and the proxy's start came after the answer.
    expect(performance.now() - answeredAt).toBeLessThan(4_000);
    expect(setup.auth.grants.get("authorization_code")).toBe(redeemed + 1);
  } finally {
    proc.kill("SIGTERM");
    await proc.exited;
  }
});

test("the browser a background workload's supervisor opens is handed none of mcpmgr's own variables (secrets among them)", async () => {
  const home = await mkdtemp(join(scratch, "home-"));
  const bin = await mkdtemp(join(scratch, "bin-"));
  const seen = join(bin, "environment");
  await writeFile(join(bin, "xdg-open"), `#!/bin/sh\nenv > "${seen}.part" && mv "${seen}.part" "${seen}"\n`);
  await chmod(join(bin, "xdg-open"), 0o755);
  // `run`: the login happens in the supervisor, which the command started (naming itself to it in
  // MCPMGR_STARTED_BY); nobody logs in, so the run ends at the timeout.
  const run = Bun.spawn(
    [
      process.execPath,
      CLI_ENTRY,
      "run",
      setup.remote.url,
      "--name",
      "background-login",
      ...publicLogin(setup, CALLBACK_PORTS[2], "3s", { browser: true }),
    ],
    {
      cwd: REPO_ROOT,
      env: { ...process.env, NO_COLOR: "1", MCPMGR_HOME: home, PATH: `${bin}:${process.env.PATH}` },
      stdin: "ignore",
      stdout: "ignore",
      stderr: "pipe",
    },
  );
  try {
    const environment = await until(() => {
      try {
        return readFileSync(seen, "utf8");
      } catch {
        return undefined;
      }
    }, "the browser to be opened");
    // Names only: a failure must not print the environment (it holds the store's password).
    const names = environment.split("\n").map((line) => line.split("=")[0] ?? "");
    expect(names).toContain("PATH");
    // None of mcpmgr's own: the command named itself in MCPMGR_STARTED_BY, and the store's password
    // and MCPMGR_HOME were in the environment the run was given.
    expect(names.filter((name) => name.startsWith("MCPMGR_"))).toEqual([]);
    expect(await run.exited).not.toBe(0);
    expect(await new Response(run.stderr).text()).toContain("did not complete within 3 s");
  } finally {
    run.kill("SIGKILL");
  }
});
