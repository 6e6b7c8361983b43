/**
 * The answer decoder (ts/chat/answer.ts) over a scripted session: the session "samples" the
 * tokens of a written text, so each rule can be checked against what a reader of the text says —
 * where a stop string cuts it, which tokens the decoder feeds instead of sampling and when, which
 * tokens enter the session, how the answer ends.
 */
import { describe, expect, it } from 'vitest';
import { decodeAnswer, type AnswerOptions } from '../ts/chat/answer.js';
import { THINK_END, TOOL_CALL_OPEN } from '../ts/chat/template-tokens.js';
import type { SampleOptions, Session } from '../ts/engine/types.js';
import { readGguf } from '../ts/gguf/index.js';
import { Tokenizer } from '../ts/tokenizer/tokenizer.js';
import { fixture } from './helpers.js';

const tok = new Tokenizer(readGguf(fixture('tinyA', 'tinyA-q2.gguf')));
const END = [...tok.stopIds][0];

/** A session whose samples are the tokens of `text` then a stop token; it records what it is fed and how it was asked to sample. */
function scripted(text: string) {
  const queue = [...tok.encode(text), END];
  const fed: number[] = [], asked: SampleOptions[] = [];
  const s = {
    tokens: [] as number[],
    eval: async (t: readonly number[]) => { fed.push(...t); s.tokens.push(...t); },
    sample: (o: SampleOptions) => { asked.push(o); return queue.shift() ?? END; },
  };
  return { session: s as unknown as Session, fed, asked, queue };
}

const run = (text: string, o: Partial<AnswerOptions> = {}) => {
  const sc = scripted(text);
  return decodeAnswer(sc.session, tok, { maxTokens: 200, sampling: { temperature: 0.7 }, ...o }).then((a) => ({ a, ...sc }));
};

describe('decodeAnswer', () => {
  it('an answer ends at its stop token: every other token enters the session, the text is content', async () => {
    const { a, fed } = await run('The lamp is lit.');
    expect(a.parsed.content).toBe('The lamp is lit.');
    expect(a.finish).toBe('stop');
    expect(tok.decode(fed)).toBe('The lamp is lit.');
    expect(a.tokens.at(-1)).toBe(END);
  });

  it('a stop string ends the answer before it, and never reaches the events', async () => {
    const seen: string[] = [];
    const { a } = await run('one two STOP three', { stop: ['STOP'], onEvent: (e) => { if (e.type === 'content') seen.push(e.text); } });
    expect(a.finish).toBe('stop_sequence');
    expect(a.stopSequence).toBe('STOP');
    expect(a.parsed.content).toBe('one two ');
    expect(seen.join('')).toBe('one two ');
    expect(a.raw).not.toContain('three');
  });

  it('reasoning past its budget: the end of the think block is fed, then the answer is sampled', async () => {
    const { a, fed, asked } = await run('a b c d e f g h i j', { startInReasoning: true, thinkingBudget: 3, maxTokens: 30 });
    const close = tok.encode(THINK_END);
    // three reasoning tokens sampled, then the close fed without sampling
    expect(fed.slice(3, 3 + close.length)).toEqual(close);
    expect(asked.length).toBe(a.tokens.length - close.length);
    expect(a.parsed.reasoning.length).toBeGreaterThan(0);
    // counted while the parser is inside the think block: the three sampled, and each fed token
    // of the close while the text before it does not hold '</think>' yet
    const beforeTag = close.filter((_, i) => !tok.decode(close.slice(0, i)).includes('</think>')).length;
    expect(a.reasoningTokens).toBe(3 + beforeTag);
    expect(a.inReasoning).toBe(false);
  });

  it('a forced tool call: its opening is fed first; the call\'s structure is sampled greedily, its values with the request\'s sampling', async () => {
    const { a, fed, asked } = await run('<parameter=city>\nOslo\n</parameter>\n</function>\n</tool_call>', {
      forceToolCall: { name: 'weather' }, greedyProtocol: true,
      tools: [{ type: 'function', function: { name: 'weather', parameters: { type: 'object', properties: { city: { type: 'string' } } } } }] as never,
    });
    const open = tok.encode(`${TOOL_CALL_OPEN}\n<function=weather>\n`);
    expect(fed.slice(0, open.length)).toEqual(open);
    const temps = new Set(asked.map((o) => o.temperature));
    expect([...temps].sort()).toEqual([0, 0.7]);
    expect(a.finish).toBe('tool_calls');
    expect(a.parsed.toolCalls[0].name).toBe('weather');
    expect(a.parsed.toolCalls[0].arguments).toEqual({ city: 'Oslo' });
  });

  it('raw text, the last token not fed, and the budget', async () => {
    const { a, fed } = await run('<tool_call> is only text here and goes on', { raw: true, feed: 'not-last', maxTokens: 4 });
    expect(a.finish).toBe('length');
    expect(a.tokens.length).toBe(4);
    expect(fed).toEqual(a.tokens.slice(0, 3));
    expect(a.parsed.toolCalls).toEqual([]);
    expect(a.parsed.content).toBe(tok.decode(a.tokens));
  });

  it('an abort keeps what was generated and says so', async () => {
    const ctl = new AbortController();
    const { a } = await run('x y z w v', { signal: ctl.signal, onEvent: () => ctl.abort() });
    expect(a.finish).toBe('abort');
    expect(a.tokens.length).toBe(1);
  });
});
