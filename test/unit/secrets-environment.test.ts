/** The read-only environment provider: MCPMGR_SECRET_<NAME> with '-' and '.' mapped to '_'. */
import { describe, expect, test } from "bun:test";
import { McpmgrError } from "../../src/errors.ts";
import { EnvironmentProvider, environmentVariableFor } from "../../src/secrets/environment.ts";
import { Secret } from "../../src/secrets/redact.ts";

async function codeOf(promise: Promise<unknown>): Promise<string> {
  try {
    await promise;
  } catch (err) {
    if (err instanceof McpmgrError) return err.code;
    throw err;
  }
  throw new Error("expected an McpmgrError");
}

describe("name mapping", () => {
  test.each([
    ["github-token", "MCPMGR_SECRET_GITHUB_TOKEN"],
    ["db.password", "MCPMGR_SECRET_DB_PASSWORD"],
    ["Mixed_Case-1.x", "MCPMGR_SECRET_MIXED_CASE_1_X"],
    ["API_KEY", "MCPMGR_SECRET_API_KEY"],
  ])("%s → %s", (name, variable) => {
    expect(environmentVariableFor(name)).toBe(variable);
  });
});

describe("EnvironmentProvider", () => {
  const env = {
    MCPMGR_SECRET_GITHUB_TOKEN: "ghp_from_env",
    MCPMGR_SECRET_DB_PASSWORD: "pw-from-env",
    MCPMGR_SECRET_EMPTY: "",
    MCPMGR_SECRETS_PASSWORD: "not a secret entry",
    MCPMGR_SECRETS_PROVIDER: "environment",
    MCPMGR_SECRET_: "no name",
    PATH: "/usr/bin",
  };
  const provider = new EnvironmentProvider(env);

  test("get maps the name and wraps the value", async () => {
    const secret = await provider.get("github-token");
    expect(secret).toBeInstanceOf(Secret);
    expect(secret?.reveal()).toBe("ghp_from_env");
    expect((await provider.get("db.password"))?.reveal()).toBe("pw-from-env");
    expect((await provider.get("GITHUB_TOKEN"))?.reveal()).toBe("ghp_from_env");
  });

  test("missing and empty variables are not found", async () => {
    expect(await provider.get("missing")).toBeUndefined();
    expect(await provider.get("empty")).toBeUndefined();
  });

  test("list gives names only, without the MCPMGR_SECRETS_* settings", async () => {
    const names = await provider.list();
    expect(names).toEqual(["DB_PASSWORD", "GITHUB_TOKEN"]);
    expect(JSON.stringify(names)).not.toContain("ghp_from_env");
  });

  // No secret name reads these (get() reads MCPMGR_SECRET_GITHUB_TOKEN for github_token): listed, they
  // looked usable, and secret list named the workloads using github_token as their users.
  test("list leaves out variables no name reads: lower case, a dash", async () => {
    const mixed = new EnvironmentProvider({ ...env, MCPMGR_SECRET_github_token: "lower", "MCPMGR_SECRET_X-Y": "dash" });
    expect(await mixed.list()).toEqual(["DB_PASSWORD", "GITHUB_TOKEN"]);
    expect(await mixed.get("github_token")).toBeInstanceOf(Secret);
    expect((await mixed.get("github_token"))?.reveal()).toBe("ghp_from_env");
  });

  test("it is read-only", async () => {
    expect(provider.writable).toBe(false);
    expect(await codeOf(provider.set("x", "y"))).toBe("SECRETS_READ_ONLY");
    expect(await codeOf(provider.delete("x"))).toBe("SECRETS_READ_ONLY");
  });

  test("invalid names are refused", async () => {
    expect(await codeOf(provider.get("not valid"))).toBe("INVALID_ARGUMENT");
  });
});
