/**
 * The native agent's loop: one Conversation (chat/conversation.ts: the exact text the session
 * holds) and one engine Session, in process — no API conversion. A user message is appended, the
 * model answers (reasoning, text, Qwen3.6 <tool_call> blocks parsed as they stream), each call
 * runs (tools.ts) and its result goes back as a tool turn, until an answer without calls. Each
 * prompt is the held text plus the template's bytes for what was added, and its tokens are the
 * session's own plus the new suffix's: only new tokens are ever prefilled.
 */
import { Conversation } from '../chat/conversation.js';
import { decodeAnswer } from '../chat/answer.js';
import type { DraftOptions } from '../engine/generate.js';
import { draftOptions, type DraftSpec } from '../engine/draft/index.js';
import { THINK_CLOSE } from '../chat/template-tokens.js';
import { AbortError } from '../engine/common.js';
import type { Engine, SampleOptions, Session } from '../engine/types.js';
import { modelIdentity } from '../model/fingerprint.js';
import { makeTools, Processes, runTool, toolSpecs, DEFAULT_LIMITS, type ToolLimits } from './tools.js';
import { sessionId, type SessionRecord, type SessionStore } from './sessions.js';
import type { Workspace } from './workspace.js';

export interface AgentUi {
  reasoning?(text: string): void;
  content?(text: string): void;
  toolStart?(name: string, args: Record<string, unknown>): void;
  toolEnd?(name: string, ok: boolean, text: string): void;
  prefill?(done: number, total: number): void;
  note?(text: string): void;
}

export interface AgentOptions {
  engine: Engine;
  workspace: Workspace;
  store: SessionStore;
  think: boolean;
  sampling: SampleOptions;
  /** tokens per assistant turn */
  maxTokens: number;
  /** speculative decoding (--draft ngram, --mtp): one drafter for the session */
  draft?: DraftSpec;
  /** tool rounds per user message before the agent stops and says so */
  maxSteps?: number;
  limits?: ToolLimits;
  ui?: AgentUi;
  /**
   * Tests only: the text each assistant turn "samples", in order. The engine still evaluates
   * every token (fed through the decode loop's `next`), so the KV state is what sampling that
   * text would have produced.
   */
  script?: string[];
}

export function systemPrompt(root: string): string {
  return [
    'You are QuarkStar\'s coding agent, working in the project at ' + root + '.',
    'Use the tools to read, search, edit and run things; paths are relative to the project.',
    'Read a file before editing it; edit_file replaces an exact, unique text.',
    'When the task is done, answer briefly with what you did and what is left.',
  ].join('\n');
}

export class Agent {
  conv: Conversation;
  readonly session: Session;
  private readonly drafts?: DraftOptions;
  readonly procs = new Processes();
  private readonly tools: ReturnType<typeof makeTools>;
  /** the tools as the chat template takes them (the same every turn) */
  private readonly toolsSpec: Record<string, unknown>[];
  /** thinking on or off for the next turns (/think, /nothink) */
  think: boolean;
  private id?: string;
  private created = 0;
  title = '';
  /** the text the session's tokens stand for (a prefix of every next prompt) */
  private heldText = '';

  constructor(private readonly o: AgentOptions) {
    this.tools = makeTools(this.procs);
    this.toolsSpec = toolSpecs(this.tools);
    this.think = o.think;
    this.session = o.engine.newSession();
    // the drafter follows the session from its first prompt on
    this.drafts = o.draft && draftOptions(o.draft, { engine: o.engine, session: this.session });
    this.conv = new Conversation(systemPrompt(o.workspace.root));
  }

  get sessionIdValue(): string | undefined { return this.id; }

  /** One user message to its final answer (tool rounds included). */
  async send(text: string, signal?: AbortSignal): Promise<{ answer: string; steps: number; stopped?: string }> {
    if (!this.id) { this.created = Date.now(); this.id = sessionId(text, this.created); this.title = text.replace(/\s+/g, ' ').slice(0, 60); }
    const keep = this.conv.length;
    this.conv.add({ role: 'user', content: text });
    const max = this.o.maxSteps ?? 50;
    for (let step = 0; ; step++) {
      let r;
      try { r = await this.answer(signal); } catch (e) {
        if (e instanceof AbortError) { if (this.conv.length === keep + 1) this.conv.truncate(keep); return { answer: '', steps: step, stopped: 'stopped by the user' }; }
        throw e;
      }
      if (!r.calls.length) return { answer: r.content, steps: step, stopped: this.whyNoAnswer(r) };
      if (step + 1 >= max) return { answer: r.content, steps: step + 1, stopped: `stopped after ${max} tool rounds` };
      for (const c of r.calls) {
        this.o.ui?.toolStart?.(c.name, c.arguments);
        const res = await runTool(this.tools, c.name, c.arguments, { ws: this.o.workspace, signal, limits: this.o.limits ?? DEFAULT_LIMITS });
        this.o.ui?.toolEnd?.(c.name, res.ok, res.text);
        this.conv.addToolResult(res.text);
      }
      if (signal?.aborted) return { answer: '', steps: step + 1, stopped: 'stopped by the user' };
    }
  }

  /** The prompt's tokens: the session's own for the held text, then the new suffix. */
  private promptTokens(prompt: string): number[] {
    const tok = this.o.engine.tokenizer;
    return (this.heldText ? tok.encodeAfter({ tokens: this.session.tokens, text: this.heldText }, prompt) : undefined) ?? tok.encode(prompt);
  }

  /** Tests only (AgentOptions.script): the next scripted turn's tokens, fed one per step, then a stop token. */
  private scripted(): ((step: number) => number | undefined) | undefined {
    if (!this.o.script) return undefined;
    const tok = this.o.engine.tokenizer;
    const forced = [...tok.encode(this.o.script.shift() ?? ''), [...tok.stopIds][0]];
    return () => forced.shift();
  }

  private async answer(signal?: AbortSignal) {
    const e = this.o.engine, tok = e.tokenizer, toolsSpec = this.toolsSpec;
    let prompt = this.conv.render({ think: this.think, tools: toolsSpec });
    let tokens = this.promptTokens(prompt);
    // room for an answer: the turn budget, or at least 1024 tokens of it; less than that compacts
    if (e.options.ctx - tokens.length < Math.min(this.o.maxTokens, 1024)) {
      this.o.ui?.note?.(`context nearly full (${tokens.length} of ${e.options.ctx} tokens): compacting`);
      await this.compact(signal);
      prompt = this.conv.render({ think: this.think, tools: toolsSpec });
      tokens = this.promptTokens(prompt);
      if (tokens.length + 16 > e.options.ctx) throw new Error(`the conversation does not fit the context (${tokens.length} tokens > ${e.options.ctx}) even after compacting: start a new session`);
    }
    await this.session.sync(tokens, { signal, progress: (d, t) => this.o.ui?.prefill?.(d, t) });
    // the turn's budget: --tokens, or less where the context is nearly full
    const budget = Math.min(this.o.maxTokens, e.options.ctx - tokens.length);
    const ui = this.o.ui;
    const ans = await decodeAnswer(this.session, tok, {
      maxTokens: budget, sampling: this.o.sampling, greedyProtocol: true, signal, startInReasoning: this.think, tools: toolsSpec as never, draft: this.drafts,
      script: this.scripted(),
      onEvent: (ev) => { if (ev.type === 'reasoning') ui?.reasoning?.(ev.text); else if (ev.type === 'content') ui?.content?.(ev.text); },
    });
    if (ans.stop === 'abort' && !ans.raw) throw new AbortError();
    this.conv.addAnswer({ prompt, raw: ans.raw, think: this.think, reasoning: ans.parsed.reasoning });
    this.heldText = tok.decode(this.session.tokens);
    const out = ans.parsed;
    return { content: out.content, calls: out.toolCalls, stop: ans.stop, inThinking: ans.inReasoning, budget };
  }

  /** Why a turn without tool calls has no complete answer (undefined: it has one). */
  private whyNoAnswer(r: { content: string; stop: string; inThinking: boolean; budget: number }): string | undefined {
    if (r.stop === 'length') {
      const room = r.budget < this.o.maxTokens ? ' (the context is nearly full: /compact or a new session)' : '';
      return r.inThinking
        ? `the answer budget of ${r.budget} tokens ran out while thinking, before any answer${room}: raise --tokens, or --nothink`
        : `the answer budget of ${r.budget} tokens ran out mid-answer${room}: raise --tokens`;
    }
    if (!r.content.trim()) return 'the model ended its turn without an answer';
    return undefined;
  }

  /** /compact: the model summarises the work so far; the context restarts from the task and that summary. */
  async compact(signal?: AbortSignal): Promise<void> {
    const first = this.conv.messages.find((m) => m.role === 'user');
    const task = typeof first?.content === 'string' ? first.content : '';
    // the summary request goes to a copy: the conversation itself is replaced below
    const probe = this.conv.clone();
    probe.add({ role: 'user', content: 'Summarise the work so far for a fresh start: the task, what was done, what was found, and what is left. Be concise.' });
    let summary = '';
    const tokens = this.promptTokens(probe.render({ think: false, tools: this.toolsSpec }));
    if (tokens.length + 512 <= this.o.engine.options.ctx) {
      await this.session.sync(tokens, { signal });
      // the text as it comes (a think block, if any, is cut below), the last token not fed: the
      // session is re-synced to the fresh conversation next
      summary = (await decodeAnswer(this.session, this.o.engine.tokenizer, { maxTokens: 512, sampling: this.o.sampling, signal, raw: true, feed: 'not-last', script: this.scripted() })).raw;
      const i = summary.lastIndexOf(THINK_CLOSE);
      if (i >= 0) summary = summary.slice(i + THINK_CLOSE.length);
    }
    const fresh = new Conversation(systemPrompt(this.o.workspace.root));
    fresh.add({ role: 'user', content: `${task}\n\n[The earlier context was compacted. Summary of the work so far:]\n${summary.trim() || '(no summary: the conversation was too long to summarise; continue from the task)'}` });
    this.conv = fresh;
    this.heldText = '';
    this.o.ui?.note?.('context compacted');
  }

  private fingerprint(): Buffer {
    return modelIdentity(this.o.engine.options.model).fingerprint;
  }

  /** The conversation's length when it was last saved or loaded (unsaved(): it has changed since). */
  private savedLength = -1;

  /** Whether the conversation holds turns that no saved session has. */
  unsaved(): boolean {
    return this.id !== undefined && this.conv.length !== this.savedLength;
  }

  /** /save: the transcript and the live KV state. */
  save(): SessionRecord {
    if (!this.id) throw new Error('nothing to save yet: send a message first');
    const text = this.o.engine.tokenizer.decode(this.session.tokens);
    this.savedLength = this.conv.length;
    return this.o.store.save(
      { id: this.id, title: this.title, created: this.created, updated: Date.now(), conversation: this.conv.toJSON() },
      { fingerprint: this.fingerprint(), text, payload: this.session.savePayload(), tokens: this.session.tokens.length, ctx: this.session.ctx },
    );
  }

  /** /switch: the saved session, its KV state loaded (no prefill) or, without one, rebuilt by prefill. */
  async switchTo(prefix: string, signal?: AbortSignal): Promise<{ record: SessionRecord; prefilled: boolean } | undefined> {
    const r = this.o.store.find(prefix);
    if (!r) return undefined;
    const kv = this.o.store.payload(r, this.fingerprint());
    this.conv = Conversation.fromJSON(r.conversation);
    this.id = r.id; this.title = r.title; this.created = r.created;
    this.savedLength = this.conv.length;
    if (kv) {
      this.session.loadPayload(kv.payload);
      this.heldText = kv.text;
      return { record: r, prefilled: false };
    }
    // stripped (or unusable payload): the saved text prefilled, as a fresh session would
    this.heldText = '';
    const tokens = this.o.engine.tokenizer.encode(this.conv.text);
    if (tokens.length) await this.session.sync(tokens, { signal, progress: (d, t) => this.o.ui?.prefill?.(d, t) });
    else await this.session.rewind(0);
    this.heldText = this.conv.text;
    return { record: r, prefilled: true };
  }

  dispose(): void {
    this.procs.stopAll();
    this.session.dispose();
  }
}
