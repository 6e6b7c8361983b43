/** Entry point for tools whose issue has not landed yet: says so plainly and exits non-zero. */
export function notBuiltYet(tool: string, what: string): never {
  process.stderr.write(`${tool}: not built yet — ${what} has not landed in this version of QuarkStar.\n`);
  process.exit(1);
}
