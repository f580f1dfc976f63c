/** Labels on engine objects: the user's --label pairs checked, mcpmgr's own labels always winning. */
import { describe, expect, test } from "bun:test";
import { ownedBy, validateUserLabels, workloadFilter, workloadLabels } from "../../src/runtime/docker/labels.ts";
import { rejection } from "../support/errors.ts";

const attempt = async (fn: () => unknown) => fn();
const label = (key: string, value = "v") => ({ key, value });

describe("validateUserLabels", () => {
  test("accepts ordinary keys and one-line values", () => {
    expect(() =>
      validateUserLabels([
        label("team", "search"),
        label("app.kubernetes.io/name", "fetch"),
        label("a-b_c"),
        label("x"),
        label("owner", ""),
        label("note", "a=b, c"),
      ]),
    ).not.toThrow();
    expect(() => validateUserLabels([])).not.toThrow();
  });

  test.each([
    "mcpmgr",
    "mcpmgr.x",
    "mcpmgr.workload",
    "com.docker.x",
    "io.docker.y",
    "org.dockerproject.z",
    "io.podman.w",
  ])("reserved key %p is INVALID_OPTION", async (key) => {
    await rejection(
      attempt(() => validateUserLabels([label(key)])),
      "INVALID_OPTION",
    );
  });

  test.each(["-team", "team-", "has space", "a..b", "a/-b", "", "a=b", "tëam"])(
    "bad key %p is INVALID_OPTION",
    async (key) => {
      await rejection(
        attempt(() => validateUserLabels([label(key)])),
        "INVALID_OPTION",
      );
    },
  );

  test.each(["line\nbreak", "carriage\rreturn", "nul\0byte", "x".repeat(4097)])(
    "bad value %# is INVALID_OPTION",
    async (value) => {
      await rejection(
        attempt(() => validateUserLabels([label("team", value)])),
        "INVALID_OPTION",
      );
    },
  );

  test("one error names every bad label and none of the good ones", async () => {
    const err = await rejection(
      attempt(() =>
        validateUserLabels([
          label("good"),
          label("-dash"),
          label("mcpmgr.role"),
          label("multi", "a\nb"),
          label("fine.too"),
        ]),
      ),
      "INVALID_OPTION",
    );
    for (const bad of ["-dash", "mcpmgr.role", "multi"]) expect(err.message).toContain(bad);
    expect(err.message).not.toContain("good");
    expect(err.message).not.toContain("fine.too");
  });
});

describe("workloadLabels", () => {
  const input = {
    workload: "fetch",
    install: "0123456789abcdef",
    group: "default",
    transport: "stdio",
    port: 41_000,
    role: "server" as const,
  };

  test("carries mcpmgr's labels after the user's", () => {
    const labels = workloadLabels({
      ...input,
      user: [label("team", "search"), label("app.kubernetes.io/name", "fetch")],
    });
    expect(labels).toEqual({
      team: "search",
      "app.kubernetes.io/name": "fetch",
      mcpmgr: "true",
      "mcpmgr.workload": "fetch",
      "mcpmgr.install": "0123456789abcdef",
      "mcpmgr.role": "server",
      "mcpmgr.group": "default",
      "mcpmgr.transport": "stdio",
      "mcpmgr.port": "41000",
    });
    expect(Object.keys(labels).slice(0, 2)).toEqual(["team", "app.kubernetes.io/name"]);
  });

  test("user labels cannot override mcpmgr's", () => {
    const labels = workloadLabels({
      ...input,
      role: "egress",
      user: [
        label("mcpmgr", "false"),
        label("mcpmgr.workload", "other"),
        label("mcpmgr.role", "server"),
        label("mcpmgr.port", "1"),
      ],
    });
    expect(labels).toMatchObject({
      mcpmgr: "true",
      "mcpmgr.workload": "fetch",
      "mcpmgr.role": "egress",
      "mcpmgr.port": "41000",
    });
  });

  test("workloadFilter selects one workload's managed objects", () => {
    expect(workloadFilter("fetch")).toEqual({ label: ["mcpmgr=true", "mcpmgr.workload=fetch"] });
  });
});

describe("ownedBy", () => {
  const labels = workloadLabels({
    workload: "fetch",
    install: "aaaa",
    group: "default",
    transport: "stdio",
    port: 1,
    role: "server",
    user: [],
  });

  test("an object is this installation's only for its own workload and install id", () => {
    expect(ownedBy(labels, "fetch", "aaaa")).toBe(true);
    expect(ownedBy(labels, "fetch", "bbbb")).toBe(false);
    expect(ownedBy(labels, "other", "aaaa")).toBe(false);
    expect(ownedBy({ ...labels, mcpmgr: "false" }, "fetch", "aaaa")).toBe(false);
    expect(ownedBy(undefined, "fetch", "aaaa")).toBe(false);
  });

  test("objects made before installations were labelled count as anyone's, as they did", () => {
    const { "mcpmgr.install": _install, ...legacy } = labels;
    expect(ownedBy(legacy, "fetch", "bbbb")).toBe(true);
  });
});
