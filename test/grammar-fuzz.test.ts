/**
 * Constrained decoding end to end on the CPU engine: the tiny random models write garbage, so
 * whatever valid JSON comes out is the mask's doing. A few hundred generated schemas (objects,
 * arrays, bounded numbers, patterns, formats, enums, anyOf/oneOf, $ref, nullable), sampled and
 * greedy, through the answer decoder: every output parses and validates against its schema
 * (test/json-schema-check.ts, written from the specification), including the ones the token
 * budget cut short and the grammar completed.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { decodeAnswer } from '../ts/chat/answer.js';
import { openEngine, type Engine } from '../ts/engine/index.js';
import { jsonGrammar, toolCallGrammar } from '../ts/grammar/grammars.js';
import { fixture } from './helpers.js';
import { validate } from './json-schema-check.js';
import { genSchemas } from './schema-gen.js';

const runs = [
  { model: 'tinyA', backend: 'cpu', seed: 11, n: 150 },
  { model: 'tinyR', backend: 'cpu', seed: 23, n: 150 },
  // the Vulkan path's masked sampling (the device's best tokens first, the row when none is allowed)
  { model: 'tinyA', backend: 'vulkan', seed: 37, n: 16 },
] as const;

for (const { model, backend, seed, n } of runs) {
  describe(`constrained decoding on ${model} (${backend}): every output validates`, () => {
    let engine: Engine;
    beforeAll(async () => { engine = await openEngine({ model: fixture(model, `${model}-q2.gguf`), backend, ctx: 512 }); });
    afterAll(() => engine?.dispose());
    const schemas = genSchemas(seed, n);
    it(`${schemas.length} generated schemas, sampled and greedy`, async () => {
      const prompt = engine.tokenizer.encode('<|im_start|>user\nJSON please<|im_end|>\n<|im_start|>assistant\n');
      const failures: string[] = [];
      const finishes: Record<string, number> = {};
      for (const [i, schema] of schemas.entries()) {
        const s = engine.newSession();
        try {
          s.seed(1000 + i);
          await s.eval(prompt);
          const a = await decodeAnswer(s, engine.tokenizer, {
            maxTokens: 120, sampling: i % 3 === 0 ? { temperature: 0 } : { temperature: 1, topK: i % 2 ? 0 : 40 },
            grammar: jsonGrammar(schema),
          });
          finishes[a.finish] = (finishes[a.finish] ?? 0) + 1;
          let v: unknown;
          try { v = JSON.parse(a.parsed.content); } catch (e) { failures.push(`#${i} ${JSON.stringify(schema)}: ${JSON.stringify(a.parsed.content)} does not parse (${(e as Error).message})`); continue; }
          const err = validate(v, schema);
          if (err) failures.push(`#${i} ${JSON.stringify(schema)}: ${JSON.stringify(a.parsed.content)}: ${err}`);
        } finally {
          s.dispose();
        }
      }
      expect(failures).toEqual([]);
      // the random models rarely close a document by themselves: both endings occur
      expect((finishes.stop ?? 0) + (finishes.length ?? 0)).toBe(schemas.length);
    }, 600_000);
  });
}

describe('calls the model opens itself, every tool strict (a lazy call grammar)', () => {
  let engine: Engine;
  beforeAll(async () => { engine = await openEngine({ model: fixture('tinyA', 'tinyA-q2.gguf'), backend: 'cpu', ctx: 512 }); });
  afterAll(() => engine?.dispose());
  const tools = [
    { type: 'function', function: { name: 'get_weather', strict: true, parameters: { type: 'object', properties: { city: { type: 'string', maxLength: 20 }, days: { type: 'integer', minimum: 1, maximum: 7 } }, required: ['city', 'days'], additionalProperties: false } } },
    { type: 'function', function: { name: 'set_flag', strict: true, parameters: { type: 'object', properties: { on: { type: 'boolean' } }, required: ['on'], additionalProperties: false } } },
  ];
  it('from the model\'s <tool_call> on, the call names a declared tool with valid arguments (sampled, 12 seeds); before it, text is free', async () => {
    const tok = engine.tokenizer, open = tok.idOf('<tool_call>')!;
    const grammar = { ...toolCallGrammar(tools), lazy: true } as const;
    for (let seed = 1; seed <= 12; seed++) {
      const s = engine.newSession();
      try {
        s.seed(seed);
        await s.eval(tok.encode('<|im_start|>user\nGo<|im_end|>\n<|im_start|>assistant\n'));
        // a few free tokens, then the model "opens" a call (scripted), then the grammar rules
        const a = await decodeAnswer(s, tok, { maxTokens: 120, sampling: { temperature: 1 }, tools, grammar, script: (step) => (step === 3 ? open : undefined) });
        const calls = a.parsed.toolCalls;
        expect(calls.length).toBeGreaterThan(0);
        for (const c of calls) {
          const t = tools.find((x) => x.function.name === c.name);
          expect(t).toBeDefined();
          expect(c.incomplete).toBeUndefined();
          expect(validate(c.arguments, t!.function.parameters)).toBeNull();
        }
      } finally {
        s.dispose();
      }
    }
  }, 120_000);
});
