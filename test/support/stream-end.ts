/**
 * How the rest of an answer's body ends when a test reads it out: "ended" when the server closed
 * it cleanly, "reset" when the connection was dropped under it (what a stream cut for an unread
 * backlog must do, so the client sees a failure rather than a short but well-formed answer).
 */
export async function howStreamEnds(reader: { read(): Promise<{ done: boolean }> }): Promise<"ended" | "reset"> {
  try {
    for (;;) if ((await reader.read()).done) return "ended";
  } catch {
    return "reset";
  }
}
