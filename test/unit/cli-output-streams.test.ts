/**
 * Log lines go out through console.error, in consola's basic format, without creating Node's
 * process.stdout/process.stderr streams: creating them loads node:stream and the fs streams,
 * several ms of start-up for every command that logs a line (an empty `mcpmgr list`, every error).
 */
import { expect, test } from "bun:test";
import { resolve } from "node:path";

const output = resolve(import.meta.dir, "../../src/cli/output.ts");

test("logging writes '[type] message' lines to stderr and never touches process.stdout or process.stderr", async () => {
  const script = `
    for (const name of ["stdout", "stderr"])
      Object.defineProperty(process, name, { get() { throw new Error("process." + name + " was used"); } });
    const { log, reportError } = await import(${JSON.stringify(output)});
    log.info("no workloads yet");
    log.warn("two", "values");
    log.level = 4;
    log.debug(new Error("outer", { cause: new Error("inner") }));
    reportError(new Error("boom"));
    log.level = 3;
    reportError(new Error("bang"));
  `;
  const proc = Bun.spawnSync(["bun", "-e", script], { stdout: "pipe", stderr: "pipe" });
  const stderr = proc.stderr.toString();
  expect(stderr).not.toContain("was used");
  expect(proc.exitCode).toBe(0);
  const lines = stderr.split("\n");
  expect(lines[0]).toBe("[info] no workloads yet");
  expect(lines[1]).toBe("[warn] two values");
  expect(lines[2]).toBe("[debug] Error: outer");
  expect(stderr).toContain("[cause]: Error: inner");
  // With --debug on, the details are printed: no advice to run again with it.
  expect(stderr).toContain("[error] unexpected error: boom (hint: report it with the details below if it persists)");
  expect(stderr).toContain(
    "[error] unexpected error: bang (hint: run again with --debug and report it if it persists)",
  );
});

test("every log line is written, however often it repeats: none is held back, merged or replaced by another", () => {
  // A supervisor logs the same "NAME running at URL" after every restart, and a restart loop the same
  // failure: consola's throttle held the sixth and later such lines back, to print one "(repeated N times)"
  // line later (or, after a pause of a second, the line before them again, with its old time).
  const script = `
    const { log, stampLogTimes } = await import(${JSON.stringify(output)});
    stampLogTimes();
    for (let i = 0; i < 9; i++) log.info("w running at http://127.0.0.1:1/mcp");
    log.warn("w: the MCP server exited with code 0");
  `;
  const proc = Bun.spawnSync(["bun", "-e", script], { stdout: "pipe", stderr: "pipe" });
  expect(proc.exitCode).toBe(0);
  const lines = proc.stderr
    .toString()
    .trimEnd()
    .split("\n")
    .map((line) => line.replace(/^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z /, ""));
  expect(lines).toEqual([
    ...Array.from({ length: 9 }, () => "[info] w running at http://127.0.0.1:1/mcp"),
    "[warn] w: the MCP server exited with code 0",
  ]);
});

test("a line of text is written without loading consola; an object still goes through it", () => {
  // Start-up (bench `cli-startup`): an empty `mcpmgr list` logs one line of text.
  const script = (line: string) => `
    const { log } = await import(${JSON.stringify(output)});
    ${line}
    console.log(JSON.stringify(Object.keys(require.cache).some((path) => path.includes("consola"))));
  `;
  const run = (line: string) => {
    const proc = Bun.spawnSync(["bun", "-e", script(line)], { stdout: "pipe", stderr: "pipe" });
    return { loaded: proc.stdout.toString().trim(), stderr: proc.stderr.toString() };
  };
  const text = run('log.info("no workloads yet"); log.warn("two", "values"); log.success("done");');
  expect(text.stderr).toBe("[info] no workloads yet\n[warn] two values\n[success] done\n");
  expect(text.loaded).toBe("false");
  const object = run("log.info({ a: 1 });");
  expect(object.stderr).toBe("[info] { a: 1 }\n");
  expect(object.loaded).toBe("true");
});
