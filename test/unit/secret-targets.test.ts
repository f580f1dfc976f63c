/**
 * `--secret NAME,target=VAR`: PATH, HOME, TMPDIR and LD_* are refused, and MCP_TRANSPORT/MCP_PORT for an HTTP
 * server only (mcpmgr sets them there, over the secret). A record's refusal goes to `refuse`, which warns.
 */
import { describe, expect, test } from "bun:test";
import { parseRunArgv } from "../../src/config/run-argv.ts";
import { McpmgrError } from "../../src/errors.ts";
import { serverVariables } from "../../src/workload/server-environment.ts";

const valuesWith = (target: string) => parseRunArgv(["srv", "--secret", `tok,target=${target}`]).values;
const HTTP = { transport: "streamable-http", port: 9000 } as const;

function refusal(run: () => unknown): McpmgrError | undefined {
  try {
    run();
    return undefined;
  } catch (error) {
    if (error instanceof McpmgrError) return error;
    throw error;
  }
}

describe("--secret targets", () => {
  test("PATH, HOME, TMPDIR and LD_* are refused for any server, with the way to write it", () => {
    for (const target of ["PATH", "HOME", "TMPDIR", "LD_PRELOAD", "LD_LIBRARY_PATH"]) {
      for (const listen of [undefined, HTTP]) {
        const err = refusal(() => serverVariables(valuesWith(target), undefined, listen));
        expect(err?.code).toBe("INVALID_OPTION");
        expect(err?.message).toContain(`--secret tok,target=${target}: ${target} is`);
        expect(err?.hint).toContain("--secret NAME,target=VAR");
      }
    }
    for (const target of ["PATH_TOKEN", "GITHUB_HOME", "path", "HTTPS_PROXY", "MCP_API_KEY"]) {
      expect(serverVariables(valuesWith(target), undefined, HTTP).secrets).toEqual([{ name: "tok", target }]);
    }
  });

  test("MCP_TRANSPORT and MCP_PORT are refused for an HTTP server and kept for a stdio one", () => {
    for (const target of ["MCP_TRANSPORT", "MCP_PORT"]) {
      const err = refusal(() => serverVariables(valuesWith(target), undefined, HTTP));
      expect(err?.code).toBe("CONFLICTING_OPTIONS");
      expect(err?.message).toContain(`--secret tok,target=${target} would be replaced: mcpmgr sets ${target}`);
      expect(serverVariables(valuesWith(target), undefined, undefined).secrets).toEqual([{ name: "tok", target }]);
    }
  });

  test("a record's are handed to refuse, saying what its start does with each", () => {
    const told: [string, string | undefined][] = [];
    const refuse = (error: McpmgrError, outcome?: string) => {
      told.push([error.message, outcome]);
    };
    expect(serverVariables(valuesWith("HOME"), undefined, HTTP, refuse).secrets).toEqual([
      { name: "tok", target: "HOME" },
    ]);
    serverVariables(valuesWith("MCP_PORT"), undefined, HTTP, refuse);
    expect(told[0]?.[1]).toBe("the secret set as HOME all the same");
    expect(told[1]?.[0]).toContain("would be replaced");
    expect(told[1]?.[1]).toBeUndefined();
  });
});
