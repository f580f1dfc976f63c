/**
 * What one Cedar question may cost the evaluator (cedar-evaluator.ts), which decides for every
 * workload on one thread: the engine's time grows with the values a policy evaluates (measured:
 * a set of 80k items took 0.6 s, 320k 2.5 s, 16 MiB of text 0.24 s). A question whose context
 * holds more than MAX_CONTEXT_ITEMS values or MAX_CONTEXT_TEXT_CHARS characters of text is denied
 * unasked,
 * and the evaluator's log says so (with the counts, never the values). Within the bounds a
 * question costs a few tens of milliseconds at most.
 */

/** Values (each string, number, boolean, set element, record attribute) in one question's context. */
export const MAX_CONTEXT_ITEMS = 10_000;
/** Characters of text (strings and attribute names) in one question's context. */
export const MAX_CONTEXT_TEXT_CHARS = 1 << 20;

export interface ContextSize {
  readonly items: number;
  readonly text: number;
}

/** The context's size, counted until it is past a bound (then `over` is true). */
export function contextSize(context: unknown): ContextSize & { readonly over: boolean } {
  let items = 0;
  let text = 0;
  const stack: unknown[] = [context];
  while (stack.length > 0) {
    if (items > MAX_CONTEXT_ITEMS || text > MAX_CONTEXT_TEXT_CHARS) return { items, text, over: true };
    const value = stack.pop();
    items++;
    if (typeof value === "string") text += value.length;
    else if (Array.isArray(value)) for (const item of value) stack.push(item);
    else if (typeof value === "object" && value !== null)
      for (const [name, item] of Object.entries(value)) {
        text += name.length;
        stack.push(item);
      }
  }
  return { items, text, over: items > MAX_CONTEXT_ITEMS || text > MAX_CONTEXT_TEXT_CHARS };
}

/** The denial of a question past the bounds: what the workload's audit line says. */
export const OVERSIZED_REASON = `the request's values are too large for Cedar to evaluate (over ${MAX_CONTEXT_ITEMS} values or ${MAX_CONTEXT_TEXT_CHARS / 2 ** 20} Mi characters of text in its context)`;
