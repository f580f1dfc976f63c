import { describe, expect, test } from "bun:test";
import { existsSync, readFileSync } from "node:fs";
import { dockerSeccompProfile, withoutSetIdModes } from "../../src/runtime/docker/setid-seccomp.ts";

type Rule = {
  names: string[];
  excludes?: unknown;
  action: string;
  args?: { index: number; value: number; valueTwo?: number; op: string }[];
  errnoRet?: number;
  includes?: unknown;
};

const rulesFor = (profile: { syscalls?: Rule[] }, name: string) =>
  (profile.syscalls ?? []).filter((r) => r.names.includes(name));
const unconditional = (rules: Rule[]) => rules.filter((r) => r.action === "SCMP_ACT_ALLOW" && !r.args?.length);

describe("withoutSetIdModes", () => {
  const engine = {
    defaultAction: "SCMP_ACT_ERRNO",
    defaultErrnoRet: 1,
    syscalls: [
      { names: ["read", "chmod", "fchmodat", "openat", "openat2", "io_uring_setup"], action: "SCMP_ACT_ALLOW" },
      { names: ["clone"], action: "SCMP_ACT_ALLOW", args: [{ index: 0, value: 2114060288, op: "SCMP_CMP_MASKED_EQ" }] },
      { names: ["kexec_load"], action: "SCMP_ACT_ERRNO" },
    ],
  };
  const derived = withoutSetIdModes(engine) as typeof engine & { syscalls: Rule[] };

  test("keeps the engine's default action, its other rules, and allows nothing it did not", () => {
    expect(derived.defaultAction).toBe("SCMP_ACT_ERRNO");
    expect(derived.defaultErrnoRet).toBe(1);
    expect(unconditional(rulesFor(derived, "read"))).toHaveLength(1);
    expect(rulesFor(derived, "clone")).toEqual([engine.syscalls[1] as Rule]);
    expect(rulesFor(derived, "kexec_load")).toEqual([engine.syscalls[2] as Rule]);
    // mkdir, mknod, creat were not allowed by this engine: still not.
    for (const name of ["mkdir", "mkdirat", "mknod", "creat", "fchmodat2"]) expect(rulesFor(derived, name)).toEqual([]);
  });

  test("a mode call is allowed only without the set-ID bits, refused with EPERM with any of them", () => {
    for (const [name, index] of [
      ["chmod", 1],
      ["fchmodat", 2],
    ] as const) {
      const rules = rulesFor(derived, name);
      expect(unconditional(rules)).toEqual([]);
      expect(rules.filter((r) => r.action === "SCMP_ACT_ALLOW").map((r) => r.args)).toEqual([
        [{ index, value: 0o6000, valueTwo: 0, op: "SCMP_CMP_MASKED_EQ" }],
      ]);
      const refused = rules.filter((r) => r.action === "SCMP_ACT_ERRNO");
      expect(refused.every((r) => r.errnoRet === 1)).toBe(true);
      expect(refused.map((r) => r.args?.[0]?.valueTwo).sort()).toEqual([0o2000, 0o4000, 0o6000]);
    }
  });

  test("openat: allowed without O_CREAT/O_TMPFILE whatever its mode argument, refused when creating with a set-ID mode", () => {
    const rules = rulesFor(derived, "openat");
    expect(unconditional(rules)).toEqual([]);
    const allowed = rules.filter((r) => r.action === "SCMP_ACT_ALLOW").map((r) => r.args);
    expect(allowed).toContainEqual([{ index: 3, value: 0o6000, valueTwo: 0, op: "SCMP_CMP_MASKED_EQ" }]);
    expect(allowed).toContainEqual([{ index: 2, value: 0o100 | 0o20000000, valueTwo: 0, op: "SCMP_CMP_MASKED_EQ" }]);
    const refused = rules.filter((r) => r.action === "SCMP_ACT_ERRNO");
    expect(refused).toHaveLength(6);
    for (const rule of refused) {
      expect(rule.args?.[0]?.index).toBe(2);
      expect(rule.args?.[0]?.value).toBe(rule.args?.[0]?.valueTwo);
      expect(rule.args?.[1]).toMatchObject({ index: 3, value: 0o6000 });
    }
  });

  test("calls whose mode a filter cannot read fail with ENOSYS", () => {
    for (const name of ["openat2", "io_uring_setup"]) {
      expect(unconditional(rulesFor(derived, name))).toEqual([]);
      expect(rulesFor(derived, name)).toContainEqual(
        expect.objectContaining({ action: "SCMP_ACT_ERRNO", errnoRet: 38 }),
      );
    }
  });

  test("on Podman's own default profile: every call it allowed stays allowed, the mode calls only conditionally", () => {
    const path = "/usr/share/containers/seccomp.json";
    expect(existsSync(path)).toBe(true);
    const original = JSON.parse(readFileSync(path, "utf8")) as { syscalls: Rule[] };
    const after = withoutSetIdModes(original) as { syscalls: Rule[] };
    const allowedNames = (p: { syscalls: Rule[] }) =>
      new Set(p.syscalls.filter((r) => r.action === "SCMP_ACT_ALLOW").flatMap((r) => r.names));
    expect([...allowedNames(after)].filter((n) => !allowedNames(original).has(n))).toEqual([]);
    for (const name of [
      "chmod",
      "fchmod",
      "fchmodat",
      "creat",
      "mkdir",
      "mkdirat",
      "mknod",
      "mknodat",
      "open",
      "openat",
    ]) {
      expect(`${name}: ${unconditional(rulesFor(after, name)).length}`).toBe(`${name}: 0`);
      expect(`${name}: ${rulesFor(after, name).length > 0}`).toBe(`${name}: true`);
    }
  });

  test("an engine rule's own conditions (capabilities, architectures, arguments) stay on the call it lets run", () => {
    const conditional = withoutSetIdModes({
      defaultAction: "SCMP_ACT_ERRNO",
      syscalls: [
        { names: ["mknod", "mknodat", "read"], action: "SCMP_ACT_ALLOW", includes: { caps: ["CAP_MKNOD"] } },
        { names: ["chmod"], action: "SCMP_ACT_ALLOW", includes: { arches: ["s390x"] }, excludes: { minKernel: "9.0" } },
        { names: ["creat"], action: "SCMP_ACT_ALLOW", args: [{ index: 0, value: 1, op: "SCMP_CMP_EQ" }] },
        // Its own comparison of the flags argument: two comparisons of one argument are alternatives to runc.
        { names: ["openat"], action: "SCMP_ACT_ALLOW", args: [{ index: 2, value: 0, op: "SCMP_CMP_EQ" }] },
        { name: "fchmod", action: "SCMP_ACT_ALLOW" },
      ],
    }) as { syscalls: Rule[] };
    const allowed = (name: string) => rulesFor(conditional, name).filter((r) => r.action === "SCMP_ACT_ALLOW");
    for (const name of ["mknod", "mknodat", "read"]) {
      expect(allowed(name).length).toBeGreaterThan(0);
      for (const rule of allowed(name)) expect(rule.includes).toEqual({ caps: ["CAP_MKNOD"] });
    }
    expect(allowed("chmod")).toEqual([
      {
        names: ["chmod"],
        action: "SCMP_ACT_ALLOW",
        includes: { arches: ["s390x"] },
        excludes: { minKernel: "9.0" },
        args: [{ index: 1, value: 0o6000, valueTwo: 0, op: "SCMP_CMP_MASKED_EQ" }],
      },
    ]);
    expect(allowed("creat").map((r) => r.args)).toEqual([
      [
        { index: 0, value: 1, op: "SCMP_CMP_EQ" },
        { index: 1, value: 0o6000, valueTwo: 0, op: "SCMP_CMP_MASKED_EQ" },
      ],
    ]);
    expect(allowed("openat")).toEqual([]);
    // The older single-name form is read too: fchmod allowed only without set-ID bits.
    expect(allowed("fchmod").map((r) => r.args)).toEqual([
      [{ index: 1, value: 0o6000, valueTwo: 0, op: "SCMP_CMP_MASKED_EQ" }],
    ]);
    expect(rulesFor(conditional, "fchmod").filter((r) => r.action === "SCMP_ACT_ERRNO")).toHaveLength(3);
  });

  test("a profile that lets everything run by default gets the refusals for every mode call", () => {
    const open = withoutSetIdModes({
      defaultAction: "SCMP_ACT_ALLOW",
      syscalls: [
        { names: ["kexec_load"], action: "SCMP_ACT_ERRNO" },
        { names: ["chmod"], action: "SCMP_ACT_ALLOW" },
      ],
    }) as { syscalls: Rule[] };
    expect(open.syscalls.filter((r) => r.action === "SCMP_ACT_ALLOW")).toEqual([]);
    for (const name of ["chmod", "fchmod", "fchmodat", "creat", "mkdir", "mkdirat", "mknod", "mknodat"])
      expect(`${name}: ${rulesFor(open, name).filter((r) => r.errnoRet === 1).length}`).toBe(`${name}: 3`);
    for (const name of ["open", "openat"])
      expect(`${name}: ${rulesFor(open, name).filter((r) => r.errnoRet === 1).length}`).toBe(`${name}: 6`);
    expect(rulesFor(open, "openat2")).toEqual([expect.objectContaining({ errnoRet: 38 })]);
    // Its own refusal of a mode call cannot be combined with ours: rejected, so run keeps the engine's and warns.
    expect(() =>
      withoutSetIdModes({ defaultAction: "SCMP_ACT_LOG", syscalls: [{ names: ["chmod"], action: "SCMP_ACT_ERRNO" }] }),
    ).toThrow();
  });
});

test("Docker's SecurityOptions: the profile file it names, whole (a path may hold '='); none for the built-in one", () => {
  expect(dockerSeccompProfile(["name=apparmor", "name=seccomp,profile=/etc/docker/seccomp.json"])).toBe(
    "/etc/docker/seccomp.json",
  );
  expect(dockerSeccompProfile(["name=seccomp,profile=/etc/docker/profiles/v=2.json", "name=cgroupns"])).toBe(
    "/etc/docker/profiles/v=2.json",
  );
  expect(dockerSeccompProfile(["name=seccomp,profile=builtin"])).toBe("builtin");
  expect(dockerSeccompProfile(["name=apparmor"])).toBeUndefined();
});
