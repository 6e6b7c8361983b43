/**
 * Stop strings over streamed text: text is released only once it cannot be the start of a stop
 * string, so a stop string (or its first half) is never sent before it is recognised; at a hit,
 * the text before it is released and everything from the stop string on is dropped.
 */
export class StopScanner {
  private held = '';
  private readonly stops: string[];
  constructor(stops: readonly string[]) {
    this.stops = stops.filter((x) => x.length > 0);
  }

  push(text: string): { text: string; hit?: string } {
    if (!this.stops.length) return { text };
    this.held += text;
    let at = -1, hit: string | undefined;
    for (const x of this.stops) {
      const i = this.held.indexOf(x);
      if (i >= 0 && (at < 0 || i < at)) { at = i; hit = x; }
    }
    if (hit !== undefined) { const out = this.held.slice(0, at); this.held = ''; return { text: out, hit }; }
    // keep the longest tail that is a proper prefix of a stop string
    let keep = 0;
    for (const x of this.stops) {
      for (let k = Math.min(x.length - 1, this.held.length); k > keep; k--) {
        if (this.held.endsWith(x.slice(0, k))) { keep = k; break; }
      }
    }
    const out = this.held.slice(0, this.held.length - keep);
    this.held = this.held.slice(this.held.length - keep);
    return { text: out };
  }

  /** the held-back tail, when the text ended without a stop string */
  flush(): string {
    const out = this.held;
    this.held = '';
    return out;
  }
}
