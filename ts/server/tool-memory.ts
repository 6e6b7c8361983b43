/**
 * Exact tool replay: every tool call the model makes gets an unguessable id, and a bounded map
 * keeps id → the assistant turn exactly as sampled (reasoning and the raw text after </think>),
 * so when a client sends the call back as JSON the next prompt is rendered from the model's own
 * bytes and the live KV state still matches.
 */
import { randomBytes } from 'node:crypto';

export interface SampledTurn {
  reasoning: string;
  /** everything after </think> as sampled: text and raw <tool_call> blocks */
  content: string;
}

export class ToolMemory {
  private map = new Map<string, SampledTurn>();
  constructor(readonly maxIds = 100_000, readonly enabled = true) {}

  newId(prefix = 'call_'): string {
    return prefix + randomBytes(12).toString('base64url');
  }

  remember(ids: string[], turn: SampledTurn): void {
    if (!this.enabled) return;
    for (const id of ids) {
      this.map.delete(id);
      this.map.set(id, turn);
      while (this.map.size > this.maxIds) this.map.delete(this.map.keys().next().value as string);
    }
  }

  /** Entries whose sampled text appears in `text` (for the disk cache's tool map). */
  within(text: string): Map<string, string> {
    const out = new Map<string, string>();
    for (const [id, t] of this.map) if (t.content && text.includes(t.content)) out.set(id, t.content);
    return out;
  }

  recall(id: string | undefined): SampledTurn | undefined {
    return id && this.enabled ? this.map.get(id) : undefined;
  }
}
