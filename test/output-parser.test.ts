import { describe, expect, it } from 'vitest';
import { OutputParser, parseOutput, type ParserEvent } from '../ts/chat/output-parser.js';
import { renderToolCall, type ToolSpec } from '../ts/chat/tool-call.js';
import { renderChat } from '../ts/chat/render.js';
import { Rng } from '../ts/model/synth.js';

const tools: ToolSpec[] = [
  { type: 'function', function: { name: 'get_weather', parameters: { type: 'object', properties: { city: { type: 'string' }, days: { type: 'integer' }, units: { type: ['string', 'null'] } } } } },
  { type: 'function', function: { name: 'write', parameters: { type: 'object', properties: { path: { type: 'string' }, content: { type: 'string' }, opts: { type: 'object' }, lines: { type: 'array' } } } } },
];

/** Feeds text in random chunk sizes (1..7 chars) to prove chunking never changes the result. */
function chunked(text: string, seed: number, startInReasoning = true) {
  const p = new OutputParser({ startInReasoning, tools });
  const rng = new Rng(seed);
  const events: ParserEvent[] = [];
  for (let i = 0; i < text.length;) { const n = rng.int(1, 7); events.push(...p.push(text.slice(i, i + n))); i += n; }
  events.push(...p.end());
  return { events, result: p.result() };
}

describe('output parser', () => {
  it('splits reasoning and answer at </think>, trimming like the template', () => {
    const r = parseOutput('Let me think.\nOK.\n</think>\n\nThe answer is 4.', { startInReasoning: true });
    expect(r).toEqual({ reasoning: 'Let me think.\nOK.', content: 'The answer is 4.', toolCalls: [] });
  });

  it('thinking off: everything is content; a model-opened <think> block is still reasoning', () => {
    expect(parseOutput('Just the answer.', { startInReasoning: false })).toEqual({ reasoning: '', content: 'Just the answer.', toolCalls: [] });
    expect(parseOutput('<think>\nhmm\n</think>\n\nA', { startInReasoning: false })).toEqual({ reasoning: 'hmm', content: 'A', toolCalls: [] });
  });

  it('parses a tool call with text before it, typing values by the schema', () => {
    const text = 'plan</think>\n\nLet me check.\n\n<tool_call>\n<function=get_weather>\n<parameter=city>\n42\n</parameter>\n<parameter=days>\n3\n</parameter>\n<parameter=units>\nnull\n</parameter>\n</function>\n</tool_call>';
    const r = parseOutput(text, { startInReasoning: true, tools });
    expect(r.reasoning).toBe('plan');
    expect(r.content).toBe('Let me check.');
    expect(r.toolCalls).toHaveLength(1);
    expect(r.toolCalls[0].name).toBe('get_weather');
    expect(r.toolCalls[0].arguments).toEqual({ city: '42', days: 3, units: null }); // "42" stays a string: city is a string
    expect(r.toolCalls[0].raw).toBe(text.slice(text.indexOf('<tool_call>')));
  });

  it('several calls, multi-line and JSON values, any chunking gives the same events', () => {
    const text = 'r</think>\n\n<tool_call>\n<function=write>\n<parameter=path>\na.txt\n</parameter>\n<parameter=content>\nline 1\n</parameter>\nline 2 <tool_call> inside value\n\n</parameter>\n<parameter=opts>\n{"mode": 420, "x": [1]}\n</parameter>\n<parameter=lines>\n[1, 2]\n</parameter>\n</function>\n</tool_call>\n<tool_call>\n<function=get_weather>\n<parameter=city>\nRome\n</parameter>\n</function>\n</tool_call>';
    const whole = chunked(text, 0);
    expect(whole.result.toolCalls.map((c) => c.name)).toEqual(['write', 'get_weather']);
    // the first </parameter> closes the value (values cannot contain it)
    expect(whole.result.toolCalls[0].arguments.content).toBe('line 1');
    for (let seed = 1; seed < 30; seed++) {
      const c = chunked(text, seed);
      expect(c.result).toEqual(whole.result);
    }
    const kinds = whole.events.map((e) => e.type);
    expect(kinds.filter((k) => k === 'tool_call_start')).toHaveLength(2);
    expect(kinds.filter((k) => k === 'tool_call_end')).toHaveLength(2);
    // argument events arrive per completed parameter, before the call ends
    expect(kinds.indexOf('tool_call_arg')).toBeLessThan(kinds.indexOf('tool_call_end'));
  });

  it('a call inside the reasoning is still a call', () => {
    const r = parseOutput('thinking <tool_call>\n<function=get_weather>\n<parameter=city>\nX\n</parameter>\n</function>\n</tool_call> more</think>done', { startInReasoning: true, tools });
    expect(r.toolCalls).toHaveLength(1);
    expect(r.reasoning).toBe('thinking more');
    expect(r.content).toBe('done');
  });

  it('an unfinished call at the end of the stream is returned, marked incomplete', () => {
    const r = parseOutput('</think>\n\n<tool_call>\n<function=write>\n<parameter=path>\nx.ts\n</parameter>\n<parameter=content>\npartial text', { startInReasoning: true, tools });
    expect(r.toolCalls).toHaveLength(1);
    expect(r.toolCalls[0].incomplete).toBe(true);
    expect(r.toolCalls[0].arguments).toEqual({ path: 'x.ts', content: 'partial text' });
  });

  it('malformed and adversarial output never throws and is kept as text', () => {
    const rng = new Rng(5);
    const pieces = ['<tool_call>', '</tool_call>', '<function=', '</function>', '<parameter=', '</parameter>', '<think>', '</think>', '>', '\n', ' ', 'x', '<', '{', '"', 'é', '<tool', '_call>'];
    for (let i = 0; i < 500; i++) {
      let s = '';
      const n = rng.int(0, 30);
      for (let k = 0; k < n; k++) s += pieces[rng.int(0, pieces.length - 1)];
      for (const start of [true, false]) {
        const a = chunked(s, i, start);
        const b = parseOutput(s, { startInReasoning: start, tools });
        expect(a.result).toEqual(b);
      }
    }
    expect(parseOutput('<tool_call>oops not a call', { startInReasoning: false })).toEqual({ reasoning: '', content: '<tool_call>oops not a call', toolCalls: [] });
    expect(parseOutput('a < b and c <tool_call', { startInReasoning: false }).content).toBe('a < b and c <tool_call');
    expect(parseOutput('<tool_call>\n<function=bad name>\n</function>', { startInReasoning: false }).toolCalls).toHaveLength(0);
    const r = parseOutput('<tool_call>\n<function=f>\n<parameter=a>\n1\n</parameter>\ngarbage\n</tool_call>', { startInReasoning: false });
    expect(r.toolCalls[0]).toMatchObject({ name: 'f', arguments: { a: 1 }, incomplete: true });
    expect(r.content).toContain('garbage');
  });

  it('parse(render(x)) == x for typed tool calls, through the chat template too', () => {
    const calls = [
      { name: 'write', arguments: { path: 'src/a.ts', content: 'multi\nline\n  indented', opts: { mode: 420, flags: ['a', 'b'] }, lines: [1, 2, 3] } },
      { name: 'get_weather', arguments: { city: 'Zürich', days: 10, units: null } },
    ];
    const native = calls.map((c) => renderToolCall(c.name, c.arguments)).join('\n');
    const r = parseOutput(`r</think>\n\n${native}`, { startInReasoning: true, tools });
    expect(r.toolCalls.map(({ name, arguments: a }) => ({ name, arguments: a }))).toEqual(calls);
    // the template renders the same text for the same calls
    const prompt = renderChat([{ role: 'user', content: 'go' }, { role: 'assistant', content: '', tool_calls: calls.map((c) => ({ type: 'function', function: c })) }], { tools, addGenerationPrompt: false });
    expect(prompt).toContain(native);
  });
});
