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
  // parameters the sampler does not implement are refused where they would change the output, never ignored
  for (const key of ['presence_penalty', 'frequency_penalty']) {
    const v = numField(b, key, { min: -2, max: 2 });
    if (v !== undefined && v !== 0) throw new ApiError('invalid_request', `${key} is not implemented by this server: send 0 or leave it out`, key);
  }
  const bias = b.logit_bias;
  if (bias !== undefined && bias !== null) {
    if (typeof bias !== 'object' || Array.isArray(bias)) throw new ApiError('invalid_request', 'logit_bias must be an object of token ids to numbers', 'logit_bias');
    if (Object.values(bias as Obj).some((x) => x !== 0)) throw new ApiError('invalid_request', 'logit_bias is not implemented by this server: send {} or leave it out', 'logit_bias');
  }
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
 * client asking for n=3 must not silently get something else).
 */
export function unsupported(b: Obj, api: 'openai' | 'anthropic' | 'responses'): void {
  const no = (field: string, why: string) => { throw new ApiError('invalid_request', `${field}: ${why}`, field); };
  if (typeof b.n === 'number' && b.n > 1 && (api !== 'openai' || b.stream === true)) no('n', 'n > 1 is supported on non-streamed chat completions only');
  if (api !== 'openai' && (b.logprobs === true || typeof b.top_logprobs === 'number')) no('logprobs', 'log-probabilities are supported on chat completions only');
}

/**
 * tool_choice in any of its spellings: "none" drops the tools from the prompt; "required" /
 * {type:"any"} forces a call, a named choice forces that tool (the coordinator feeds the opening
 * of the call instead of sampling it); "auto" (the default) leaves it to the model.
 */
export function toolChoice(tc: unknown, api: 'openai' | 'anthropic' | 'responses', tools: Obj[] | undefined): { tools?: Obj[]; force?: { name?: string } } {
  const names = (tools ?? []).map((t) => ((t.function as Obj | undefined)?.name ?? t.name) as string);
  const named = (name: unknown) => {
    if (typeof name !== 'string' || !names.includes(name)) throw new ApiError('invalid_request', `tool_choice names ${JSON.stringify(name)}, which is not one of the request's tools (${names.join(', ') || 'none'})`, 'tool_choice');
    return { tools, force: { name } };
  };
  const need = () => { if (!names.length) throw new ApiError('invalid_request', 'tool_choice requires a tool call but the request has no tools', 'tool_choice'); };
  if (tc === undefined || tc === null || tc === 'auto') return { tools };
  if (tc === 'none') return {};
  if (tc === 'required' || tc === 'any') { need(); return { tools, force: {} }; }
  if (typeof tc === 'object' && !Array.isArray(tc)) {
    const o = tc as Obj;
    if (o.type === 'auto') return { tools };
    if (o.type === 'none') return {};
    if (o.type === 'any' || o.type === 'required') { need(); return { tools, force: {} }; }
    if (api === 'anthropic' && o.type === 'tool') return named(o.name);
    if (o.type === 'function') return named(api === 'openai' && typeof o.function === 'object' && o.function ? (o.function as Obj).name : o.name);
  }
  throw new ApiError('invalid_request', `tool_choice ${JSON.stringify(tc)} is not one of "auto", "none", "required" or a named tool`, 'tool_choice');
}

/** Reasoning tokens per effort level before the think block is closed for the model (none: no limit). */
export const THINKING_BUDGETS: Record<string, number | undefined> = { minimal: 256, low: 1024, medium: 4096, high: 16384, xhigh: undefined, max: undefined };

/** The thinking budget a request asks for: Anthropic budget_tokens, else an effort level (reasoning_effort, reasoning.effort, output_config.effort). */
export function thinkingBudget(b: Obj): number | undefined {
  const th = b.thinking as Obj | undefined;
  if (th && th.budget_tokens !== undefined) {
    if (!Number.isInteger(th.budget_tokens) || (th.budget_tokens as number) < 1) throw new ApiError('invalid_request', 'thinking.budget_tokens must be a positive integer', 'thinking');
    return th.budget_tokens as number;
  }
  const effort = b.reasoning_effort ?? (b.reasoning as Obj | undefined)?.effort ?? (b.output_config as Obj | undefined)?.effort;
  if (effort === undefined || effort === null || effort === 'none') return undefined;
  if (typeof effort !== 'string' || !(effort in THINKING_BUDGETS)) throw new ApiError('invalid_request', `reasoning effort ${JSON.stringify(effort)} is not one of ${Object.keys(THINKING_BUDGETS).join(', ')}`, 'reasoning_effort');
  return THINKING_BUDGETS[effort];
}

/** OpenAI logprobs / top_logprobs: the number of alternatives per token, or undefined when not asked. */
export function logprobsOf(b: Obj): number | undefined {
  const top = numField(b, 'top_logprobs', { min: 0, max: 20, int: true });
  if (top !== undefined && b.logprobs !== true) throw new ApiError('invalid_request', 'top_logprobs needs logprobs: true', 'top_logprobs');
  return b.logprobs === true ? top ?? 0 : undefined;
}
