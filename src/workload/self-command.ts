/** How this executable starts another copy of itself (source run or compiled binary). */
export function selfCommand(...args: string[]): string[] {
  // In a compiled binary the entry lives in Bun's embedded file system.
  const compiled = Bun.main.startsWith("/$bunfs/") || /^[A-Z]:\\~BUN\\/.test(Bun.main);
  return compiled ? [process.execPath, ...args] : [process.execPath, Bun.main, ...args];
}
