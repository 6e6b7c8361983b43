/**
 * One evaluation question through the inference path users run: the Qwen3.6 chat prompt, the
 * shared decode loop (engine/generate.ts) with a generation budget, and — in thinking mode — a
 * thinking budget after which "</think>" and "Answer:" are fed so the model still gives a final
 * answer. Grading is extract.ts's.
 */
import { renderChat } from '../chat/render.js';
import { THINK_CLOSE } from '../chat/template-tokens.js';
import { AbortError } from '../engine/common.js';
import { generate } from '../engine/generate.js';
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
  const dec = tok.decoder();
  let text = '';
  let inThink = o.think;
  const forced: number[] = [];
  let forcedUsed = false;
  const budget = thinkingBudget(o.tokens);
  const r = await generate(s, {
    maxTokens: o.tokens, sampling: o.sampling, stopIds: tok.stopIds, signal: o.signal, gate: o.gate,
    next: (step) => {
      if (inThink && !forcedUsed && step >= budget) { forced.push(...tok.encode(FORCED_CLOSE)); forcedUsed = true; }
      return forced.shift();
    },
    onToken: (id) => {
      if (tok.stopIds.has(id)) return;
      const piece = dec.push(id);
      text += piece;
      const wasThinking = inThink;
      if (inThink && text.includes(THINK_CLOSE)) inThink = false;
      if (piece) o.onText?.(piece, wasThinking);
    },
  });
  const tail = dec.end();
  text += tail;
  if (tail) o.onText?.(tail, inThink);
  const given = extractAnswer(q.format, text, o.think, q.choices?.length);
  return { ...base, generated: text, generatedTokens: r.tokens.length, ms: performance.now() - t0, given, pass: isCorrect(q, given), stop: r.stop, forced: forcedUsed };
}
