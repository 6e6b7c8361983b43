/**
 * One evaluation question through the inference path users run: the Qwen3.6 chat prompt, the
 * shared decode loop (engine/generate.ts) with a generation budget, and — in thinking mode — a
 * thinking budget after which "</think>" and "Answer:" are fed so the model still gives a final
 * answer. Grading is extract.ts's.
 */
import { renderChat } from '../chat/render.js';
import { THINK_CLOSE } from '../chat/template-tokens.js';
import { AbortError } from '../engine/common.js';
import { decodeAnswer } from '../chat/answer.js';
import type { Engine, SampleOptions, Session } from '../engine/types.js';
import { extractAnswer, isCorrect } from './extract.js';
import { promptFor, type Question } from './questions.js';

export interface RunOptions {
  /** generation budget per question (tokens) */
  tokens: number;
  think: boolean;
  sampling: SampleOptions;
  seed: number;
  signal?: AbortSignal;
  /** each generated piece, and whether it is reasoning */
  onText?: (text: string, reasoning: boolean) => void;
  /** awaited before every token (the TUI's pause) */
  gate?: () => Promise<void>;
}

export interface QuestionResult {
  id: string;
  category: Question['category'];
  format: Question['format'];
  prompt: string;
  generated: string;
  promptTokens: number;
  generatedTokens: number;
  ms: number;
  /** the extracted answer (undefined: none found) */
  given?: string;
  correct: string;
  pass: boolean;
  /** how generation ended; `forced` when the thinking budget closed the think block */
  stop: 'eos' | 'length' | 'abort' | 'callback';
  forced: boolean;
}

/** The text fed when the thinking budget is spent: the think block closes and the answer line starts. */
export const FORCED_CLOSE = `\n${THINK_CLOSE}\n\nAnswer:`;

/** Tokens kept for the answer after thinking: a quarter of the budget, at most 1024. */
export function thinkingBudget(tokens: number): number {
  return tokens - Math.min(1024, Math.floor(tokens / 4));
}

export function renderQuestion(q: Question, think: boolean): string {
  return renderChat([{ role: 'user', content: promptFor(q) }], { enableThinking: think ? undefined : false });
}

export async function runQuestion(engine: Engine, s: Session, q: Question, o: RunOptions): Promise<QuestionResult> {
  const tok = engine.tokenizer;
  const prompt = renderQuestion(q, o.think);
  const ids = tok.encode(prompt);
  const t0 = performance.now();
  const base = { id: q.id, category: q.category, format: q.format, prompt, promptTokens: ids.length, correct: q.answer };
  try {
    await s.sync(ids, { signal: o.signal });
  } catch (e) {
    // stopped during the prefill: nothing generated, nothing graded
    if (e instanceof AbortError) return { ...base, generated: '', generatedTokens: 0, ms: performance.now() - t0, pass: false, stop: 'abort', forced: false };
    throw e;
  }
  s.seed(o.seed);
  let text = '';
  let inThink = o.think;
  const forced: number[] = [];
  let forcedUsed = false;
  const budget = thinkingBudget(o.tokens);
  // the text unparsed (the grader reads the think block too), the last token not fed (the next
  // question syncs the session anew); the think block closed by FORCED_CLOSE once its budget is spent
  const r = await decodeAnswer(s, tok, {
    maxTokens: o.tokens, sampling: o.sampling, signal: o.signal, gate: o.gate, raw: true, feed: 'not-last',
    script: (step) => {
      if (inThink && !forcedUsed && step >= budget) { forced.push(...tok.encode(FORCED_CLOSE)); forcedUsed = true; }
      return forced.shift();
    },
    onEvent: (ev) => {
      if (ev.type !== 'content') return;
      text += ev.text;
      const wasThinking = inThink;
      if (inThink && text.includes(THINK_CLOSE)) inThink = false;
      o.onText?.(ev.text, wasThinking);
    },
  });
  const given = extractAnswer(q.format, text, o.think, q.choices?.length);
  return { ...base, generated: text, generatedTokens: r.tokens.length, ms: performance.now() - t0, given, pass: isCorrect(q, given), stop: r.stop, forced: forcedUsed };
}
