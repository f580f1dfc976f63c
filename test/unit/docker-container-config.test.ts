/**
 * Container policy without an engine: create options (hardening, mounts, ports), the network
 * mode, mounts from the profile and -v (mcpmgr's own folders hidden), and the egress helper's config.
 * Image verification: docker-image-verification.test.ts.
 */
import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { basename, dirname, join } from "node:path";
import { expandPermissions, type PermissionProfile } from "../../src/config/permission-profile.ts";
import {
  defaultLimits,
  mcpmgrDirsUnder,
  networkModeFor,
  resolveMounts,
  serverContainerOptions,
  serverPortFor,
  type ServerContainerInput,
} from "../../src/runtime/docker/container-config.ts";
import { egressConfigFor, ipamGateways } from "../../src/runtime/docker/network-isolation.ts";
import { rejection } from "../support/errors.ts";
import { mcpmgrProtectedDirs } from "../../src/runtime/host-paths.ts";
import { evaluatorSocketPath } from "../../src/state/cedar-socket-path.ts";
import { resolvePaths } from "../../src/state/paths.ts";

const attempt = async (fn: () => unknown) => fn();

const networkProfile = expandPermissions("network");

/** A profile object: least privilege, with `changes` on top. */
function profile(
  changes: {
    read?: string[];
    write?: string[];
    mode?: string;
    allowHost?: string[];
    allowPort?: number[];
    privileged?: boolean;
  } = {},
): PermissionProfile {
  return {
    read: changes.read ?? [],
    write: changes.write ?? [],
    network: {
      ...(changes.mode !== undefined ? { mode: changes.mode } : {}),
      outbound: { insecure_allow_all: false, allow_host: changes.allowHost ?? [], allow_port: changes.allowPort ?? [] },
      inbound: { allow_host: [] },
    },
    privileged: changes.privileged ?? false,
  };
}

let dir: string;
beforeAll(() => {
  dir = mkdtempSync(join(tmpdir(), "mcpmgr-container-config-"));
  for (const sub of ["data", "other", "home/proj"]) mkdirSync(join(dir, sub), { recursive: true });
  writeFileSync(join(dir, "empty"), "");
});
afterAll(() => rmSync(dir, { recursive: true, force: true }));

describe("serverContainerOptions", () => {
  const input = (changes: Partial<ServerContainerInput> = {}): ServerContainerInput => ({
    containerName: "mcpmgr-fetch",
    image: "ghcr.io/org/fetch:1",
    args: [],
    env: {},
    labels: { mcpmgr: "true" },
    stdio: true,
    profile: networkProfile,
    volumes: [],
    overlays: [],
    networkMode: "bridge",
    publish: [],
    limits: defaultLimits,
    ...changes,
  });

  test("hardening that does not depend on the user", () => {
    const { HostConfig: host } = serverContainerOptions(input());
    expect(host?.CapDrop).toEqual(["ALL"]);
    expect(host?.SecurityOpt).toEqual(["no-new-privileges"]);
    expect(host?.Privileged).toBe(false);
    expect(host?.Init).toBe(true);
    expect(host?.Memory).toBe(defaultLimits.memoryBytes);
    expect(host?.MemorySwap).toBe(defaultLimits.memoryBytes);
    expect(host?.PidsLimit).toBe(defaultLimits.pids);
    expect(host?.RestartPolicy).toEqual({ Name: "no" });
  });

  test("privileged only when the profile says so; limits as given", () => {
    const { HostConfig: host } = serverContainerOptions(
      input({ profile: profile({ privileged: true }), limits: { memoryBytes: 64 * 1024 ** 2, pids: 32 } }),
    );
    expect(host?.Privileged).toBe(true);
    expect(host?.CapDrop).toEqual(["ALL"]);
    expect(host?.Memory).toBe(64 * 1024 ** 2);
    expect(host?.PidsLimit).toBe(32);
  });

  test("name, image, args, env and labels", () => {
    const options = serverContainerOptions(
      input({ args: ["--port", "1"], env: { A: "1", B: "x=y" }, labels: { mcpmgr: "true", team: "a" } }),
    );
    expect(options).toMatchObject({
      name: "mcpmgr-fetch",
      Image: "ghcr.io/org/fetch:1",
      Cmd: ["--port", "1"],
      Env: ["A=1", "B=x=y"],
      Labels: { mcpmgr: "true", team: "a" },
    });
    expect("Cmd" in serverContainerOptions(input())).toBe(false);
  });

  test("stdin is kept open only for stdio servers", () => {
    expect(serverContainerOptions(input({ stdio: true }))).toMatchObject({
      OpenStdin: true,
      AttachStdin: true,
      StdinOnce: false,
      Tty: false,
    });
    expect(serverContainerOptions(input({ stdio: false }))).toMatchObject({ OpenStdin: false, AttachStdin: false });
  });

  test("ports are published on 127.0.0.1 only", () => {
    const options = serverContainerOptions(
      input({
        stdio: false,
        publish: [
          { containerPort: 8080, hostPort: 41_001 },
          { containerPort: 9000, hostPort: 41_002 },
        ],
      }),
    );
    expect(options.ExposedPorts).toEqual({ "8080/tcp": {}, "9000/tcp": {} });
    expect(options.HostConfig?.PortBindings).toEqual({
      "8080/tcp": [{ HostIp: "127.0.0.1", HostPort: "41001" }],
      "9000/tcp": [{ HostIp: "127.0.0.1", HostPort: "41002" }],
    });
  });

  test("volumes keep their read-only flag; overlays hide dirs with tmpfs and files with the empty file", () => {
    const options = serverContainerOptions(
      input({
        volumes: [
          { hostPath: "/h/src", containerPath: "/src", readOnly: true },
          { hostPath: "/h/out", containerPath: "/out", readOnly: false },
        ],
        overlays: [
          { kind: "dir", containerPath: "/src/.git" },
          { kind: "file", containerPath: "/src/.env" },
        ],
        emptyFile: "/tmp/mcpmgr-empty",
      }),
    );
    const mounts = options.HostConfig?.Mounts ?? [];
    expect(mounts).toHaveLength(4);
    expect(mounts[0]).toEqual({ Type: "bind", Source: "/h/src", Target: "/src", ReadOnly: true });
    expect(mounts[1]).toEqual({ Type: "bind", Source: "/h/out", Target: "/out", ReadOnly: false });
    expect(mounts[2]).toMatchObject({ Type: "tmpfs", Target: "/src/.git" });
    expect(mounts[3]).toEqual({ Type: "bind", Source: "/tmp/mcpmgr-empty", Target: "/src/.env", ReadOnly: true });
  });

  test("network mode as given; an alias only on a named network", () => {
    expect(serverContainerOptions(input({ networkMode: "none", networkAlias: "mcp-server" }))).not.toHaveProperty(
      "NetworkingConfig",
    );
    expect(serverContainerOptions(input({ networkMode: "bridge", networkAlias: "mcp-server" }))).not.toHaveProperty(
      "NetworkingConfig",
    );
    const named = serverContainerOptions(input({ networkMode: "mcpmgr-fetch-isolated", networkAlias: "mcp-server" }));
    expect(named.HostConfig?.NetworkMode).toBe("mcpmgr-fetch-isolated");
    expect(named.NetworkingConfig).toEqual({
      EndpointsConfig: { "mcpmgr-fetch-isolated": { Aliases: ["mcp-server"] } },
    });
  });
});

describe("networkModeFor", () => {
  const none = profile({ mode: "none" });

  test("profile mode none → no network; --network none agrees", () => {
    expect(networkModeFor(none, undefined)).toBe("none");
    expect(networkModeFor(none, "none")).toBe("none");
  });

  test.each(["host", "bridge", "mynet"])(
    "profile mode none with --network %s is CONFLICTING_OPTIONS",
    async (network) => {
      await rejection(
        attempt(() => networkModeFor(none, network)),
        "CONFLICTING_OPTIONS",
      );
    },
  );

  test("default bridge; --network host or a name is honoured; a profile mode is the default", () => {
    expect(networkModeFor(networkProfile, undefined)).toBe("bridge");
    expect(networkModeFor(networkProfile, "host")).toBe("host");
    expect(networkModeFor(networkProfile, "mynet")).toBe("mynet");
    expect(networkModeFor(profile({ mode: "host" }), undefined)).toBe("host");
    // No mode and no outbound rules is the built-in none: no network.
    expect(networkModeFor(profile({ mode: "" }), undefined)).toBe("none");
    expect(networkModeFor(profile({ mode: "", allowHost: ["example.com"] }), undefined)).toBe("bridge");
    expect(networkModeFor(profile({ mode: "host" }), "mynet")).toBe("mynet");
  });

  // BUG (src/runtime/docker/container-config.ts networkModeFor, and the same `mode === "none"`
  // test in network-isolation.ts and workload/container-placement.ts): the built-in "none" profile
  // has no network.mode, so a container run with --permission-profile none gets the bridge.
  test("the built-in none profile gives the container no network", async () => {
    expect(networkModeFor(expandPermissions("none"), undefined)).toBe("none");
    await rejection(
      attempt(() => networkModeFor(expandPermissions("none"), "host")),
      "CONFLICTING_OPTIONS",
    );
  });
});

describe("resolveMounts", () => {
  test("relative host paths resolve against cwd; ~ against home; the read-only flag is kept", () => {
    const mounts = resolveMounts(
      profile(),
      [
        { hostPath: "data", containerPath: "/data", readOnly: true },
        { hostPath: "~/proj", containerPath: "/proj", readOnly: false },
      ],
      join(dir, "home"),
      dir,
    );
    expect(mounts).toEqual([
      { hostPath: join(dir, "data"), containerPath: "/data", readOnly: true },
      { hostPath: join(dir, "home/proj"), containerPath: "/proj", readOnly: false },
    ]);
  });

  test("profile read mounts are read-only, write mounts writable; a bare path mounts at itself", () => {
    const data = join(dir, "data");
    const mounts = resolveMounts(
      profile({ read: [`${data}:/in`, data], write: [`${join(dir, "other")}:/out`] }),
      [],
      dir,
      dir,
    );
    expect(mounts).toEqual([
      { hostPath: data, containerPath: "/in", readOnly: true },
      { hostPath: data, containerPath: data, readOnly: true },
      { hostPath: join(dir, "other"), containerPath: "/out", readOnly: false },
    ]);
  });

  test("a ~ container path is the server's home", () => {
    expect(resolveMounts(profile({ read: [`${join(dir, "data")}:~/data`] }), [], dir, dir)).toEqual([
      { hostPath: join(dir, "data"), containerPath: "/home/mcp/data", readOnly: true },
    ]);
  });

  test("a later mount on the same target wins: -v over the profile", () => {
    const mounts = resolveMounts(
      profile({ read: [`${join(dir, "data")}:/work`] }),
      [{ hostPath: join(dir, "other"), containerPath: "/work", readOnly: false }],
      dir,
      dir,
    );
    expect(mounts).toEqual([{ hostPath: join(dir, "other"), containerPath: "/work", readOnly: false }]);
    const twice = resolveMounts(
      profile(),
      [
        { hostPath: "data", containerPath: "/w/./x", readOnly: false },
        { hostPath: "other", containerPath: "/w/x", readOnly: true },
      ],
      dir,
      dir,
    );
    expect(twice).toEqual([{ hostPath: join(dir, "other"), containerPath: "/w/x", readOnly: true }]);
  });

  // BUG (src/runtime/docker/container-config.ts resolveMounts): posix.normalize keeps a trailing
  // '/', so "/work/" and "/work" are not merged and the engine refuses "Duplicate mount point".
  test("a trailing slash names the same target", () => {
    const mounts = resolveMounts(
      profile({ read: [`${join(dir, "data")}:/work`] }),
      [{ hostPath: join(dir, "other"), containerPath: "/work/", readOnly: false }],
      dir,
      dir,
    );
    expect(mounts).toEqual([{ hostPath: join(dir, "other"), containerPath: "/work", readOnly: false }]);
  });

  test("a missing host path or a relative container path is INVALID_OPTION", async () => {
    await rejection(
      attempt(() => resolveMounts(profile(), [{ hostPath: "missing", containerPath: "/m", readOnly: true }], dir, dir)),
      "INVALID_OPTION",
    );
    await rejection(
      attempt(() => resolveMounts(profile({ write: [`${join(dir, "nope")}:/x`] }), [], dir, dir)),
      "INVALID_OPTION",
    );
    await rejection(
      attempt(() =>
        resolveMounts(profile(), [{ hostPath: "data", containerPath: "rel/path", readOnly: true }], dir, dir),
      ),
      "INVALID_OPTION",
    );
  });
});

describe("serverPortFor", () => {
  test("the given port (--target-port or the registry's) wins over the image's", () => {
    expect(serverPortFor(9090, [7071])).toBe(9090);
  });

  test("else the image's EXPOSEd TCP port when there is exactly one; else none (the caller's default)", () => {
    expect(serverPortFor(undefined, [7071])).toBe(7071);
    expect(serverPortFor(undefined, [])).toBeUndefined();
    expect(serverPortFor(undefined, [7071, 7072])).toBeUndefined();
  });
});

describe("egressConfigFor", () => {
  test("profile network allows everything", () => {
    const config = egressConfigFor(networkProfile, false, []);
    expect(config).toMatchObject({ allowAll: true, allowHosts: [], allowPorts: [], allowGateway: false });
    expect(config.listenPort).toBeGreaterThan(0);
    expect(config.ingress).toBeUndefined();
  });

  test("allow_host and allow_port are copied; nothing else is allowed", () => {
    const source = profile({ allowHost: [".github.com", "api.example.com"], allowPort: [443] });
    const config = egressConfigFor(source, true, []);
    expect(config).toMatchObject({
      allowAll: false,
      allowHosts: [".github.com", "api.example.com"],
      allowPorts: [443],
      allowGateway: true,
    });
    expect(config.allowHosts).not.toBe(source.network.outbound.allow_host);
    config.allowHosts.push("evil.example");
    expect(source.network.outbound.allow_host).toEqual([".github.com", "api.example.com"]);
  });

  test("profile none allows nothing, whatever its lists say", () => {
    const withLists = profile({ mode: "none", allowHost: ["example.com"], allowPort: [443] });
    const allowAll: PermissionProfile = {
      ...withLists,
      network: { ...withLists.network, outbound: { ...withLists.network.outbound, insecure_allow_all: true } },
    };
    for (const p of [expandPermissions("none"), withLists, allowAll]) {
      expect(egressConfigFor(p, false, [])).toMatchObject({ allowAll: false, allowHosts: [], allowPorts: [] });
    }
  });

  test("the default bridge gateway and the given host addresses are the gateway list, without duplicates; the host's names too", () => {
    const gateways = egressConfigFor(networkProfile, false, []).blockedAddresses;
    expect(gateways).toEqual(["172.17.0.1"]);
    const withHost = egressConfigFor(networkProfile, false, [
      "172.17.0.1",
      "172.30.0.1",
      "172.30.0.1",
    ]).blockedAddresses;
    expect(withHost.filter((a) => a === "172.30.0.1")).toHaveLength(1);
    expect(withHost.filter((a) => a === "172.17.0.1")).toHaveLength(1);
    expect(egressConfigFor(networkProfile, false, []).blockedHostNames).toContain("host.docker.internal");
    expect(egressConfigFor(networkProfile, false, []).blockedHostNames).toContain("host.containers.internal");
  });

  test("loopback, link-local, 0/8 and :: are in the list --allow-docker-gateway never lifts, with or without it", () => {
    for (const allowGateway of [false, true]) {
      const config = egressConfigFor(networkProfile, allowGateway, ["127.0.0.1"]);
      for (const range of [
        "127.0.0.0/8",
        "::1/128",
        "::/128",
        "169.254.0.0/16",
        "fe80::/10",
        "0.0.0.0/8",
        "fd00:ec2::254/128",
        "100.100.100.200",
      ])
        expect(config.alwaysBlockedAddresses).toContain(range);
      expect(config.alwaysBlockedAddresses).not.toContain("172.17.0.1");
    }
  });

  test("an IPAM pool without a Gateway (Debian docker.io's default bridge) yields its subnet's first host address", () => {
    expect(ipamGateways([{ Subnet: "172.17.0.0/16" }])).toEqual(["172.17.0.1"]);
    expect(ipamGateways([{ Subnet: "10.1.2.128/25" }, { Subnet: "192.168.5.0/24", Gateway: "192.168.5.254" }])).toEqual(
      ["10.1.2.129", "192.168.5.254"],
    );
    // Unparsable or too small to have a separate gateway: nothing guessed.
    expect(ipamGateways([{ Subnet: "fd00::/64" }, { Subnet: "10.0.0.4/31" }, {}])).toEqual([]);
  });

  test("ingress relays to the server's port by its alias", () => {
    const config = egressConfigFor(networkProfile, false, [], { containerPort: 9000, hostPort: 41_000 });
    expect(config.ingress).toMatchObject({ targetHost: "mcp-server", targetPort: 9000 });
    expect(config.ingress?.listenPort).not.toBe(config.listenPort);
  });
});

test("a container's volume of the temporary folder hides the Cedar evaluator's socket folder there (a long home puts it there)", () => {
  const top = mkdtempSync(join(tmpdir(), "mcpmgr-cedar-container-"));
  try {
    const env = { MCPMGR_HOME: join(top, "a-home-whose-path-is-long-enough-to-push-the-socket-out-of-it-0123456789") };
    const folder = dirname(evaluatorSocketPath(resolvePaths(env)));
    expect(folder.startsWith(env.MCPMGR_HOME)).toBe(false);
    const hidden = mcpmgrDirsUnder(
      [{ hostPath: dirname(folder), containerPath: "/hosttmp", readOnly: false }],
      mcpmgrProtectedDirs(env),
    );
    expect(hidden).toContain(join("/hosttmp", basename(folder)));
  } finally {
    rmSync(top, { recursive: true, force: true });
  }
});
