/**
 * Streaming parser of model output: reasoning until </think>, then content and tool calls.
 * Feed decoded text in any chunking; events come out as soon as they are certain. Tags split
 * across chunks are held back, whitespace at the edges of reasoning/content is trimmed the way
 * the chat template trims it, and nothing malformed ever throws: text that does not parse as a
 * tool call is returned as content.
 */
import { THINK_CLOSE, THINK_OPEN } from './template-tokens.js';
import { schemaIndex, typeValue, type ParsedToolCall, type ToolSpec } from './tool-call.js';

export type ParserEvent =
  | { type: 'reasoning'; text: string }
  | { type: 'content'; text: string }
  | { type: 'tool_call_start'; index: number; name: string }
  | { type: 'tool_call_arg'; index: number; key: string; value: unknown }
  | { type: 'tool_call_end'; index: number; call: ParsedToolCall };

export interface ParsedOutput {
  reasoning: string;
  content: string;
  toolCalls: ParsedToolCall[];
}

export interface OutputParserOptions {
  /** the prompt ended with "<think>\n": output starts inside the reasoning (thinking on) */
  startInReasoning: boolean;
  tools?: ToolSpec[];
}

const CALL_OPEN = '<tool_call>';
const CALL_CLOSE = '</tool_call>';
const FN_OPEN = '<function=';
const FN_CLOSE = '</function>';
const PARAM_OPEN = '<parameter=';
const PARAM_CLOSE = '</parameter>';

type Mode = 'reasoning' | 'content' | 'call';
type CallStage = 'expect-function' | 'in-function' | 'in-value' | 'expect-close';

/** Length of the longest suffix of s that is a proper prefix of one of the markers. */
function heldSuffix(s: string, markers: string[]): number {
  const max = Math.min(s.length, Math.max(...markers.map((m) => m.length)) - 1);
  for (let k = max; k > 0; k--) {
    const tail = s.slice(s.length - k);
    if (markers.some((m) => m.startsWith(tail))) return k;
  }
  return 0;
}

/** Emits text with leading whitespace dropped at the start and trailing whitespace held back. */
class TrimmedStream {
  private started = false;
  private pendingWs = '';
  text = '';
  constructor(private readonly emit: (t: string) => void) {}
  push(t: string): void {
    if (!t) return;
    if (!this.started) {
      t = t.replace(/^\s+/, '');
      if (!t) return;
      this.started = true;
    }
    const m = /\s+$/.exec(t);
    const body = m ? t.slice(0, m.index) : t;
    if (body) {
      const out = this.pendingWs + body;
      this.pendingWs = '';
      this.text += out;
      this.emit(out);
    }
    this.pendingWs += m ? m[0] : '';
  }
  /** the whitespace held at a boundary is dropped (template trims it) */
  cut(): void {
    this.pendingWs = '';
  }
}

export class OutputParser {
  private mode: Mode;
  private buf = '';
  private events: ParserEvent[] = [];
  private atStart = true;
  private reasoning: TrimmedStream;
  private content: TrimmedStream;
  private calls: ParsedToolCall[] = [];
  private schemas: Map<string, Map<string, string[]>>;
  // the call being parsed
  private stage: CallStage = 'expect-function';
  private callRaw = '';
  private callName = '';
  private callArgs: Record<string, unknown> = {};
  private paramKey = '';
  private callReturn: Mode = 'content';
  private callStarted = false;

  constructor(o: OutputParserOptions) {
    this.mode = o.startInReasoning ? 'reasoning' : 'content';
    this.schemas = schemaIndex(o.tools);
    this.reasoning = new TrimmedStream((text) => this.events.push({ type: 'reasoning', text }));
    this.content = new TrimmedStream((text) => this.events.push({ type: 'content', text }));
  }

  push(text: string): ParserEvent[] {
    this.buf += text;
    this.run(false);
    return this.drain();
  }

  /** End of stream: flush held text; an unclosed call is returned marked incomplete. */
  end(): ParserEvent[] {
    this.run(true);
    if (this.mode === 'call') {
      if (this.callStarted) this.finishCall(true);
      else this.abortCallText();
    }
    this.reasoning.cut();
    this.content.cut();
    return this.drain();
  }

  /** Inside tool-call structure (tags, names), where sampling should be greedy; not inside a value. */
  inProtocol(): boolean {
    return this.mode === 'call' && this.stage !== 'in-value';
  }

  /** Still inside the think block (the next token is reasoning, for usage counts and thinking budgets). */
  inReasoning(): boolean {
    return this.mode === 'reasoning';
  }

  result(): ParsedOutput {
    return { reasoning: this.reasoning.text, content: this.content.text, toolCalls: this.calls.slice() };
  }

  private drain(): ParserEvent[] {
    const e = this.events;
    this.events = [];
    return e;
  }

  private textStream(): TrimmedStream {
    return this.mode === 'reasoning' ? this.reasoning : this.content;
  }

  private run(final: boolean): void {
    for (let guard = 0; guard < 1_000_000; guard++) {
      const progressed = this.mode === 'call' ? this.stepCall(final) : this.stepText(final);
      if (!progressed) return;
    }
  }

  /** Reasoning or content: look for the next tag that changes mode. */
  private stepText(final: boolean): boolean {
    if (this.atStart) {
      // a model that opens its own think block (thinking not prefilled): enter reasoning
      const t = this.buf.replace(/^\s+/, '');
      if (!final && THINK_OPEN.startsWith(t) && t.length < THINK_OPEN.length) return false;
      if (t.startsWith(THINK_OPEN)) { this.buf = t.slice(THINK_OPEN.length); this.mode = 'reasoning'; }
      this.atStart = false;
    }
    const markers = this.mode === 'reasoning' ? [THINK_CLOSE, CALL_OPEN] : [CALL_OPEN];
    let best = -1, which = '';
    for (const m of markers) {
      const i = this.buf.indexOf(m);
      if (i >= 0 && (best < 0 || i < best)) { best = i; which = m; }
    }
    const stream = this.textStream();
    if (best < 0) {
      const hold = final ? 0 : heldSuffix(this.buf, markers);
      stream.push(this.buf.slice(0, this.buf.length - hold));
      this.buf = this.buf.slice(this.buf.length - hold);
      return false;
    }
    stream.push(this.buf.slice(0, best));
    stream.cut();
    this.buf = this.buf.slice(best + which.length);
    if (which === THINK_CLOSE) this.mode = 'content';
    else this.beginCall();
    return true;
  }

  private beginCall(): void {
    this.callReturn = this.mode === 'reasoning' ? 'reasoning' : 'content';
    this.mode = 'call';
    this.stage = 'expect-function';
    this.callRaw = CALL_OPEN;
    this.callName = '';
    this.callArgs = {};
    this.callStarted = false;
  }

  /** Consumes `n` chars of buf into the raw call text. */
  private take(n: number): string {
    const s = this.buf.slice(0, n);
    this.callRaw += s;
    this.buf = this.buf.slice(n);
    return s;
  }

  /** Not a tool call after all: its text becomes ordinary text again. */
  private abortCall(): void {
    const raw = this.callRaw;
    this.mode = this.callReturn;
    this.callRaw = '';
    if (this.callStarted) {
      // events already announced a call: close it as incomplete rather than retract it
      this.calls.push({ name: this.callName, arguments: this.callArgs, raw, incomplete: true });
      this.events.push({ type: 'tool_call_end', index: this.calls.length - 1, call: this.calls[this.calls.length - 1] });
      return;
    }
    this.textStream().push(raw);
  }

  private finishCall(incomplete: boolean): void {
    if (incomplete) {
      // the stream ended inside the call: keep what is complete, and a value cut short as it is
      if (this.stage === 'in-value') this.addParam(this.buf, true);
      this.callRaw += this.buf;
      this.buf = '';
    }
    const call: ParsedToolCall = { name: this.callName, arguments: this.callArgs, raw: this.callRaw };
    if (incomplete) call.incomplete = true;
    this.calls.push(call);
    this.events.push({ type: 'tool_call_end', index: this.calls.length - 1, call });
    this.mode = this.callReturn;
    this.callRaw = '';
  }

  /** Used at end of stream when not even the function name arrived: everything is text. */
  private abortCallText(): void {
    const raw = this.callRaw + this.buf;
    this.buf = '';
    this.mode = this.callReturn;
    this.callRaw = '';
    this.textStream().push(raw);
  }

  private addParam(rawValue: string, fromEnd = false): void {
    let v = rawValue.startsWith('\n') ? rawValue.slice(1) : rawValue;
    if (!fromEnd && v.endsWith('\n')) v = v.slice(0, -1);
    const value = typeValue(v, this.schemas.get(this.callName)?.get(this.paramKey));
    this.callArgs[this.paramKey] = value;
    this.events.push({ type: 'tool_call_arg', index: this.calls.length, key: this.paramKey, value });
  }

  /** Inside <tool_call>: function header, parameters, closing tags. */
  private stepCall(final: boolean): boolean {
    // skip whitespace between structural tags
    if (this.stage !== 'in-value') {
      const ws = /^\s*/.exec(this.buf)![0].length;
      if (ws) this.take(ws);
      if (!this.buf) { if (final && !this.callStarted) this.abortCallText(); return false; }
    }
    const expectTag = (tags: string[]): string | null | undefined => {
      for (const t of tags) if (this.buf.startsWith(t)) return t;
      if (!final && tags.some((t) => t.startsWith(this.buf))) return undefined; // need more text
      return null; // junk
    };
    switch (this.stage) {
      case 'expect-function': {
        const t = expectTag([FN_OPEN]);
        if (t === undefined) return false;
        if (t === null) { if (final) this.abortCallText(); else this.abortCall(); return true; }
        const close = this.buf.indexOf('>');
        if (close < 0) { if (final) { this.abortCallText(); return true; } return false; }
        const name = this.buf.slice(FN_OPEN.length, close);
        if (!name || /[\s<]/.test(name)) { this.abortCall(); return true; }
        this.take(close + 1);
        this.callName = name;
        this.callStarted = true;
        this.stage = 'in-function';
        this.events.push({ type: 'tool_call_start', index: this.calls.length, name });
        return true;
      }
      case 'in-function': {
        const t = expectTag([PARAM_OPEN, FN_CLOSE, CALL_CLOSE]);
        if (t === undefined) return false;
        if (t === null) { this.abortCall(); return true; }
        if (t === CALL_CLOSE) { this.take(t.length); this.finishCall(false); return true; }
        if (t === FN_CLOSE) { this.take(t.length); this.stage = 'expect-close'; return true; }
        const close = this.buf.indexOf('>');
        if (close < 0) return false;
        const key = this.buf.slice(PARAM_OPEN.length, close);
        if (!key || /[\s<]/.test(key)) { this.abortCall(); return true; }
        this.take(close + 1);
        this.paramKey = key;
        this.stage = 'in-value';
        return true;
      }
      case 'in-value': {
        const i = this.buf.indexOf(PARAM_CLOSE);
        if (i < 0) return false;
        const raw = this.take(i);
        this.take(PARAM_CLOSE.length);
        this.addParam(raw);
        this.stage = 'in-function';
        return true;
      }
      case 'expect-close': {
        const t = expectTag([CALL_CLOSE]);
        if (t === undefined) return false;
        if (t !== null) this.take(t.length);
        this.finishCall(false); // a missing </tool_call> after </function> is tolerated
        return true;
      }
    }
  }
}

/** Parses a complete output in one go. */
export function parseOutput(text: string, o: OutputParserOptions): ParsedOutput {
  const p = new OutputParser(o);
  p.push(text);
  p.end();
  return p.result();
}
