/**
 * Proxies from the environment: loopback is never proxied, by mcpmgr's client
 * (src/proxy/upstream/proxy-env.ts) nor, through no_proxy set at start-up (src/config/loopback.ts),
 * by Bun's fetch.
 */
import { expect, test } from "bun:test";
import { keepLoopbackOffEnvironmentProxy } from "../../src/config/loopback.ts";
import { usesEnvironmentProxy } from "../../src/proxy/upstream/proxy-env.ts";

test("a proxy from the environment applies to other hosts, never to loopback", () => {
  const env = { HTTP_PROXY: "http://proxy.test:3128", HTTPS_PROXY: "http://proxy.test:3128" };
  expect(usesEnvironmentProxy(new URL("http://upstream.test/mcp"), env)).toBe(true);
  expect(usesEnvironmentProxy(new URL("https://upstream.test/mcp"), env)).toBe(true);
  for (const url of [
    "http://127.0.0.1:8080/mcp",
    "http://127.0.0.2/mcp",
    "http://localhost:8080/mcp",
    "http://[::1]:8080/mcp",
  ])
    expect({ url, proxied: usesEnvironmentProxy(new URL(url), env) }).toEqual({ url, proxied: false });
  expect(usesEnvironmentProxy(new URL("http://upstream.test/mcp"), { ...env, NO_PROXY: "upstream.test" })).toBe(false);
});

test("no_proxy gets loopback added (both spellings) when a proxy is set, and only then", () => {
  const none: Record<string, string | undefined> = { PATH: "/bin" };
  keepLoopbackOffEnvironmentProxy(none);
  expect(none).toEqual({ PATH: "/bin" });

  const proxied: Record<string, string | undefined> = { https_proxy: "http://proxy.test:3128", NO_PROXY: "corp.test" };
  keepLoopbackOffEnvironmentProxy(proxied);
  expect(proxied.no_proxy).toBe("corp.test,localhost,127.0.0.1,::1");
  expect(proxied.NO_PROXY).toBe("corp.test,localhost,127.0.0.1,::1");

  const already: Record<string, string | undefined> = { HTTP_PROXY: "http://p:1", no_proxy: "*" };
  keepLoopbackOffEnvironmentProxy(already);
  expect(already).toEqual({ HTTP_PROXY: "http://p:1", no_proxy: "*" });
});

test("Bun's fetch then reaches loopback directly, with a proxy that accepts nothing in the environment", async () => {
  await using server = Bun.serve({ hostname: "127.0.0.1", port: 0, fetch: () => new Response("direct") });
  const saved = { ...process.env };
  try {
    for (const name of ["no_proxy", "NO_PROXY", "all_proxy", "ALL_PROXY"]) delete process.env[name];
    process.env.HTTP_PROXY = "http://127.0.0.1:9";
    process.env.http_proxy = "http://127.0.0.1:9";
    keepLoopbackOffEnvironmentProxy(process.env);
    expect(await (await fetch(`http://127.0.0.1:${server.port}/`)).text()).toBe("direct");
  } finally {
    for (const name of Object.keys(process.env)) if (!(name in saved)) delete process.env[name];
    Object.assign(process.env, saved);
  }
});
