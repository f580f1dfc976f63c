/**
 * The network line `run` prints for a container before it starts: it names what the server may
 * reach, and mentions an allow-list only when the profile has one (and it goes unenforced).
 */
import { expect, test } from "bun:test";
import type { PermissionProfile } from "../../src/config/permission-profile.ts";
import { containerNetwork } from "../../src/runtime/grant-summary.ts";

function profile(outbound: PermissionProfile["network"]["outbound"]): PermissionProfile {
  return { read: [], write: [], network: { outbound, inbound: { allow_host: [] } }, privileged: false };
}

test("the built-in network profile has no allow-list: none is mentioned", () => {
  const any = profile({ insecure_allow_all: true, allow_host: [], allow_port: [] });
  expect(containerNetwork(any, "bridge", false)).toBe("bridge network, any outbound connection");
});

test("a profile with an allow-list, without --isolate-network: the line says it is not enforced", () => {
  const listed = profile({ insecure_allow_all: false, allow_host: ["api.example.com"], allow_port: [443] });
  expect(containerNetwork(listed, "bridge", false)).toBe(
    "bridge network, any outbound connection: the profile's allow-list is not enforced without --isolate-network",
  );
});
