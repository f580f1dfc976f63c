/** Ordering release versions (x.y.z, a pre-release suffix ignored): what a channel must not go back from. */
export function olderThan(a: string, b: string): boolean {
  const parts = (v: string) => (v.split("-")[0] ?? "").split(".").map(Number);
  const [x, y] = [parts(a), parts(b)];
  for (let i = 0; i < 3; i++) if ((x[i] ?? 0) !== (y[i] ?? 0)) return (x[i] ?? 0) < (y[i] ?? 0);
  return false;
}
