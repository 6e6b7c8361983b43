/** The median of a sample (the upper middle one for an even count): the benchmark scripts' figure of a run. */
export function median(x: number[]): number {
  const s = x.slice().sort((p, q) => p - q);
  return s[Math.floor(s.length / 2)];
}
