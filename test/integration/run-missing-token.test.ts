/**
 * A registry entry that needs a token, run without it: the missing token is the whole answer,
 * not a line after the grant summary of a container that will never start.
 */
import { expect, setDefaultTimeout, test } from "bun:test";
import { docker } from "../support/docker-fixtures.ts";
import { CLI_ENTRY } from "../support/processes.ts";

setDefaultTimeout(60_000);

for (const mode of [[], ["--foreground"]]) {
  test(`run${mode.map((m) => ` ${m}`).join("")} github without its token: the error comes alone, before any grant summary`, async () => {
    const name = `token-less${mode.length}`;
    const proc = Bun.spawn([process.execPath, CLI_ENTRY, "run", ...mode, "github", "--name", name], {
      env: { ...process.env, MCPMGR_RUNTIME: "docker", NO_COLOR: "1", GITHUB_PERSONAL_ACCESS_TOKEN: "" },
      stdin: "ignore",
      stdout: "pipe",
      stderr: "pipe",
    });
    const [code, out, err] = await Promise.all([
      proc.exited,
      new Response(proc.stdout).text(),
      new Response(proc.stderr).text(),
    ]);
    expect(code).toBe(2);
    expect(err).toContain("[error] github needs GITHUB_PERSONAL_ACCESS_TOKEN");
    expect(`${out}${err}`).not.toContain("gets (docker container");
    expect(`${out}${err}`).not.toContain("no host paths");
    expect(docker("ps", "-aq", "--filter", `label=mcpmgr.workload=${name}`).out).toBe("");
  });
}
