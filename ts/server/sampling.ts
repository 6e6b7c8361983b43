/** Request fields shared by the APIs: sampling, token budgets, stop sequences, thinking controls. */
import type { SampleOptions } from '../engine/types.js';
import { ApiError } from './errors.js';

type Obj = Record<string, unknown>;

function numField(b: Obj, key: string, o: { min?: number; max?: number; int?: boolean } = {}): number | undefined {
  const v = b[key];
  if (v === undefined || v === null) return undefined;
  if (typeof v !== 'number' || !Number.isFinite(v)) throw new ApiError('invalid_request', `${key} must be a number`, key);
  if (o.int && !Number.isInteger(v)) throw new ApiError('invalid_request', `${key} must be an integer`, key);
  if (o.min !== undefined && v < o.min) throw new ApiError('invalid_request', `${key} must be ≥ ${o.min}`, key);
  if (o.max !== undefined && v > o.max) throw new ApiError('invalid_request', `${key} must be ≤ ${o.max}`, key);
  return v;
}

export function sampling(b: Obj, defaults: SampleOptions): SampleOptions & { seed?: number } {
  return {
    temperature: numField(b, 'temperature', { min: 0, max: 2 }) ?? defaults.temperature,
    topP: numField(b, 'top_p', { min: 0, max: 1 }) ?? defaults.topP,
    topK: numField(b, 'top_k', { min: 0, int: true }) ?? defaults.topK,
    minP: numField(b, 'min_p', { min: 0, max: 1 }) ?? defaults.minP,
    seed: numField(b, 'seed', { int: true }),
  };
}

export function maxTokens(b: Obj, keys: string[], fallback: number): number {
  for (const k of keys) { const v = numField(b, k, { min: 1, int: true }); if (v !== undefined) return v; }
  return fallback;
}

export function stops(v: unknown, key: string): string[] | undefined {
  if (v === undefined || v === null) return undefined;
  if (typeof v === 'string') return [v];
  if (Array.isArray(v) && v.every((x) => typeof x === 'string')) return v as string[];
  throw new ApiError('invalid_request', `${key} must be a string or an array of strings`, key);
}

/** Thinking is on unless the request turns it off (any of the spellings clients use). */
export function thinkingOn(b: Obj): boolean {
  const kw = b.chat_template_kwargs as Obj | undefined;
  if (kw && kw.enable_thinking === false) return false;
  if (b.think === false || b.enable_thinking === false) return false;
  const th = b.thinking as Obj | undefined;
  if (th && th.type === 'disabled') return false;
  if (b.reasoning_effort === 'none') return false;
  return true;
}

/**
 * Request fields this server does not implement yet, refused by name rather than ignored (a
 * client asking for n=3 or a JSON schema must not silently get something else).
 */
export function unsupported(b: Obj, api: 'openai' | 'anthropic' | 'responses'): void {
  const no = (field: string, why: string) => { throw new ApiError('invalid_request', `${field}: ${why}`, field); };
  if (typeof b.n === 'number' && b.n > 1) no('n', 'only n=1 is supported (send the request several times)');
  const rf = b.response_format as Obj | undefined;
  if (rf && rf.type !== 'text') no('response_format', `type ${JSON.stringify(rf.type)} is not supported yet (only "text")`);
  const tf = (b.text as Obj | undefined)?.format as Obj | undefined;
  if (api === 'responses' && tf && tf.type !== 'text') no('text.format', `type ${JSON.stringify(tf.type)} is not supported yet (only "text")`);
  if (b.logprobs === true || (typeof b.top_logprobs === 'number' && b.top_logprobs > 0)) no('logprobs', 'log-probabilities are not supported yet');
  const tc = b.tool_choice;
  const forced = api === 'anthropic' ? (tc as Obj | undefined)?.type === 'any' || (tc as Obj | undefined)?.type === 'tool'
    : tc === 'required' || (typeof tc === 'object' && tc !== null);
  if (forced) no('tool_choice', 'forcing a tool call is not supported yet ("auto" and "none" are)');
}
