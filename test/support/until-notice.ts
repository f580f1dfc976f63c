/**
 * A command that prints a notice on stderr while it goes on running (`run` of a server that has not
 * answered yet says it is still starting): read until the notice, then Ctrl-C.
 */

/**
 * `argv` spawned, its stderr read until `notice` (at most `timeoutMs`): what it printed by then, and
 * `interrupt` (Ctrl-C; its exit code and everything it printed, read to the end).
 */
export async function spawnUntilNotice(
  argv: readonly string[],
  options: { env: Record<string, string | undefined>; cwd?: string },
  notice: string,
  timeoutMs: number,
) {
  const run = Bun.spawn([...argv], { ...options, stdout: "pipe", stderr: "pipe" });
  const reader = run.stderr.getReader();
  const decoder = new TextDecoder();
  let stderr = "";
  const deadline = Date.now() + timeoutMs;
  // One read pending at a time: a read left behind by the timeout would take the next chunk with it.
  let pending = reader.read();
  while (!stderr.includes(notice) && Date.now() < deadline) {
    const chunk = await Promise.race([pending, Bun.sleep(1_000).then(() => undefined)]);
    if (chunk === undefined) continue;
    if (chunk.done) break;
    stderr += decoder.decode(chunk.value, { stream: true });
    pending = reader.read();
  }
  const interrupt = async () => {
    run.kill("SIGINT");
    const code = await run.exited;
    let all = stderr;
    for (let chunk = await pending; !chunk.done; chunk = await reader.read()) all += decoder.decode(chunk.value);
    return { code, stderr: all };
  };
  return { run, stderr, interrupt };
}
