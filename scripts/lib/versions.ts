/**
 * Ordering release versions (x.y.z with an optional pre-release suffix, semver's rules): what a
 * channel must not go back from.
 */

/** Whether `a` comes before `b` by major.minor.patch alone (a pre-release suffix ignored). */
export function olderThan(a: string, b: string): boolean {
  const parts = (v: string) => (v.split("-")[0] ?? "").split(".").map(Number);
  const [x, y] = [parts(a), parts(b)];
  for (let i = 0; i < 3; i++) if ((x[i] ?? 0) !== (y[i] ?? 0)) return (x[i] ?? 0) < (y[i] ?? 0);
  return false;
}

/** Whether `a` comes before `b` with pre-releases counted: 1.2.0-rc.1 < 1.2.0-rc.2 < 1.2.0 < 1.2.1. */
export function precedes(a: string, b: string): boolean {
  if (olderThan(a, b)) return true;
  if (olderThan(b, a)) return false;
  const pre = (v: string) => {
    const dash = v.indexOf("-");
    return dash === -1 ? undefined : v.slice(dash + 1).split(".");
  };
  const [x, y] = [pre(a), pre(b)];
  // A pre-release comes before the release it leads to.
  if (x === undefined || y === undefined) return x !== undefined && y === undefined;
  for (let i = 0; i < Math.max(x.length, y.length); i++) {
    const [p, q] = [x[i], y[i]];
    if (p === undefined) return true; // rc < rc.1: fewer identifiers first
    if (q === undefined) return false;
    if (p === q) continue;
    const [pn, qn] = [/^\d+$/.test(p), /^\d+$/.test(q)];
    if (pn && qn) return Number(p) < Number(q);
    if (pn !== qn) return pn; // numbers before words
    return p < q;
  }
  return false;
}

/** Whether `version` has a pre-release suffix (1.2.0-rc.1). */
export function isPrerelease(version: string): boolean {
  return version.includes("-");
}
