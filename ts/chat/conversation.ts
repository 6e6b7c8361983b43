/**
 * An append-only conversation that renders exactly what a live session holds. The messages are
 * kept for the template, and so is the exact text of every prompt and answer so far: each answer
 * enters as sampled (a random or unusual answer — an unclosed think block, odd newlines — would
 * not survive a re-render), and each new prompt is that text plus the template's own bytes for
 * the messages added since (the assistant turn's end marker, user turns, grouped tool results,
 * the generation prompt). A follow-up therefore prefills only its new suffix. Used by the CLI
 * chat and the WebSocket chat.
 */
import { renderChat } from './render.js';
import { IM_END, THINK_CLOSE } from './template-tokens.js';
import type { ChatMessage } from './types.js';

export class Conversation {
  readonly messages: ChatMessage[] = [];
  /** the prompt and answer text the session holds after the last answer ('' before it) */
  private held = '';
  /** messages up to and including the last answer */
  private answered = 0;

  constructor(system?: string) {
    if (system) this.messages.push({ role: 'system', content: system });
  }

  get length(): number {
    return this.messages.length;
  }

  /** the exact text a session holds after the last answer */
  get text(): string {
    return this.held;
  }

  /** Sets the system prompt; only before the first message. */
  setSystem(text: string): void {
    if (this.messages.length > 0) throw new Error('the system prompt can only be set before the first message');
    this.messages.push({ role: 'system', content: text });
  }

  addUser(text: string): void {
    this.messages.push({ role: 'user', content: text });
  }

  addToolResult(text: string): void {
    this.messages.push({ role: 'tool', content: text });
  }

  /** Any message after the last answer (user, tool, system: the template renders it in place). */
  add(m: ChatMessage): void {
    this.messages.push(m);
  }

  /** What a saved session keeps (agent/sessions.ts). */
  toJSON(): { messages: ChatMessage[]; held: string; answered: number } {
    return { messages: [...this.messages], held: this.held, answered: this.answered };
  }

  static fromJSON(j: { messages: ChatMessage[]; held: string; answered: number }): Conversation {
    const c = new Conversation();
    c.messages.push(...j.messages);
    c.held = j.held;
    c.answered = Math.min(j.answered, j.messages.length);
    return c;
  }

  /** An independent copy (a fork goes on from here without changing this one). */
  clone(): Conversation {
    const c = new Conversation();
    c.messages.push(...this.messages);
    c.held = this.held;
    c.answered = this.answered;
    return c;
  }

  /** The prompt for the next answer. */
  render(o: { think: boolean; tools?: unknown[] }): string {
    const full = renderChat(this.messages, { tools: o.tools, enableThinking: o.think ? undefined : false, preserveThinking: true });
    if (!this.held) return full;
    const before = renderChat(this.messages.slice(0, this.answered), { tools: o.tools, preserveThinking: true, addGenerationPrompt: false });
    // (the template renders earlier turns alike in both: only its bytes after them are new)
    if (!full.startsWith(before)) return full;
    return this.held + IM_END + '\n' + full.slice(before.length);
  }

  /**
   * The answer sampled after `prompt` (which render() gave): with thinking on, `raw` holds the
   * reasoning, "</think>" and the answer; `reasoning` is the parsed reasoning text.
   */
  addAnswer(o: { prompt: string; raw: string; think: boolean; reasoning: string }): void {
    const i = o.raw.indexOf(THINK_CLOSE);
    const after = !o.think ? o.raw : i >= 0 ? o.raw.slice(i + THINK_CLOSE.length) : '';
    this.messages.push({ role: 'assistant', content: after, reasoning_content: o.reasoning });
    this.held = o.prompt + o.raw;
    this.answered = this.messages.length;
  }

  /** Back to the first n messages (a turn that failed or was cancelled leaves nothing behind). */
  truncate(n: number): void {
    this.messages.length = Math.min(n, this.messages.length);
    if (n < this.answered) { this.held = ''; this.answered = 0; }
  }
}
