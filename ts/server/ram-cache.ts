/**
 * The in-memory prompt cache (`--cache-ram MB`): session payloads of recent conversations, kept
 * when another request takes the one live session, so a side request (a title, a memory
 * sub-agent, a side query with another system prompt) does not cost the main conversation its
 * prefix. Looked up like the disk cache — the longest cached text that is a byte prefix of the
 * prompt — and evicted least-recently-used to stay within the byte budget.
 */
export interface RamEntry {
  text: string;
  /** the client scope it belongs to (--cache-scope key); undefined: shared */
  scope?: string;
  payload: Uint8Array;
  tokens: number;
  lastUsed: number;
}

export class RamCache {
  private entries: RamEntry[] = [];
  private clock = 0;
  constructor(readonly budgetBytes: number) {}

  get bytes(): number {
    return this.entries.reduce((s, e) => s + e.payload.byteLength, 0);
  }

  get size(): number {
    return this.entries.length;
  }

  put(text: string, payload: Uint8Array, tokens: number, scope?: string): void {
    if (payload.byteLength > this.budgetBytes) return;
    this.entries = this.entries.filter((e) => e.text !== text || e.scope !== scope);
    this.entries.push({ text, scope, payload, tokens, lastUsed: ++this.clock });
    this.entries.sort((a, b) => a.lastUsed - b.lastUsed);
    while (this.bytes > this.budgetBytes) this.entries.shift();
  }

  /** The longest entry of the scope whose text is a byte prefix of `prompt`, at least minChars long. */
  lookup(prompt: string, minChars = 1, scope?: string): RamEntry | undefined {
    let best: RamEntry | undefined;
    for (const e of this.entries) if (e.scope === scope && e.text.length >= minChars && prompt.startsWith(e.text) && (!best || e.text.length > best.text.length)) best = e;
    if (best) best.lastUsed = ++this.clock;
    return best;
  }
}
