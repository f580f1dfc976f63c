/**
 * valibot's `record`, every key kept. valibot's own leaves out the keys `__proto__`, `prototype`
 * and `constructor` without a word, and each is a name a user may choose: a workload or group
 * called `constructor` was forgotten at the next read of the state (its AI-client entry left in
 * the client's file for good), as were a tool override, an environment variable or a label of
 * that name. The issues are valibot's own, with the same paths (`toolsOverride.echo: …`). The
 * object has no prototype, so a name looked up and absent is undefined, not Object's own
 * `constructor`.
 */
import * as v from "valibot";

type Dataset = { typed?: boolean; value: unknown; issues?: v.BaseIssue<unknown>[] };
type Runner = { "~run"(dataset: Dataset, config: v.Config<v.BaseIssue<unknown>>): Dataset };

export function namedRecord<
  const K extends v.BaseSchema<string, string, v.BaseIssue<unknown>>,
  const V extends v.GenericSchema,
>(key: K, value: V) {
  const base = v.record(key, value);
  const run = (dataset: Dataset, config: v.Config<v.BaseIssue<unknown>>): Dataset => {
    const input = dataset.value as Record<string, unknown> | null;
    if (!input || typeof input !== "object") return (base as unknown as Runner)["~run"](dataset, config);
    const entries: Record<string, unknown> = Object.create(null);
    let typed = true;
    const issues: v.BaseIssue<unknown>[] = [];
    for (const entryKey of Object.keys(input)) {
      const entryValue = input[entryKey];
      const keyDataset = (key as unknown as Runner)["~run"]({ value: entryKey }, config);
      const valueDataset = (value as unknown as Runner)["~run"]({ value: entryValue }, config);
      for (const [origin, part] of [
        ["key", keyDataset],
        ["value", valueDataset],
      ] as const) {
        for (const issue of part.issues ?? []) {
          const item = { type: "object", origin, input, key: entryKey, value: entryValue } as const;
          (issue as { path?: unknown[] }).path = origin === "key" ? [item] : [item, ...(issue.path ?? [])];
          issues.push(issue);
        }
      }
      if (!keyDataset.typed || !valueDataset.typed) typed = false;
      if (keyDataset.typed) entries[keyDataset.value as string] = valueDataset.value;
      if (issues.length > 0 && config.abortEarly) break;
    }
    return issues.length > 0 ? { typed: false, value: entries, issues } : { typed, value: entries };
  };
  return { ...base, "~run": run } as unknown as typeof base;
}
