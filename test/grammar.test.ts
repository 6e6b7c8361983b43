/**
 * The grammar engine (ts/grammar): which documents a schema's grammar accepts (against what
 * the JSON Schema specification says of each), which keywords it refuses by name, that a token
 * mask is exactly the set of tokens whose bytes the grammar accepts (against trying every token
 * one by one), and that the shortest completion completes.
 */
import { describe, expect, it } from 'vitest';
import { Constraint, computeMask, maskHas, walkBytes } from '../ts/grammar/constraint.js';
import { jsonGrammar, toolCallGrammar } from '../ts/grammar/grammars.js';
import { callStart, canEnd, docStart, type Stack } from '../ts/grammar/matcher.js';
import { compileSchema, SchemaError } from '../ts/grammar/schema.js';
import { vocabIndex } from '../ts/grammar/vocab.js';
import { readGguf } from '../ts/gguf/index.js';
import { Tokenizer } from '../ts/tokenizer/tokenizer.js';
import { vocabFileTokenizer } from '../ts/grammar/vocab-file.js';
import { fixture } from './helpers.js';
import { validate } from './json-schema-check.js';

const te = new TextEncoder();
const accepts = (schema: unknown, text: string | Uint8Array) => walkBytes([docStart(compileSchema(schema))], typeof text === 'string' ? te.encode(text) : text).some(canEnd);

describe('JSON Schema grammar: what it accepts', () => {
  const obj = { type: 'object', properties: { a: { type: 'integer' }, b: { type: 'string' } }, required: ['a'] };
  const cases: [string, unknown, string | Uint8Array, boolean][] = [
    ['required present, members in any order', obj, '{"b": "x", "a": -3}', true],
    ['a required member missing', obj, '{"b": "x"}', false],
    ['an integer written with a fraction', obj, '{"a": 1.5}', false],
    ['a member twice', obj, '{"a": 1, "a": 2}', false],
    ['a member the schema does not declare (additionalProperties unset: not generated)', obj, '{"a": 1, "c": 2}', false],
    ['additionalProperties: false', { type: 'object', properties: { a: { const: 'v' } }, required: ['a'], additionalProperties: false }, '{"a":"v","b":1}', false],
    ['additionalProperties as a schema', { type: 'object', properties: {}, additionalProperties: { type: 'number' } }, '{"b": 1, "cc": 2.5}', true],
    ['additionalProperties schema violated', { type: 'object', properties: {}, additionalProperties: { type: 'number' } }, '{"b": "1"}', false],
    ['minimum/maximum inclusive', { type: 'number', minimum: 0, maximum: 10 }, '10', true],
    ['above maximum', { type: 'number', minimum: 0, maximum: 10 }, '10.5', false],
    ['a fraction in range', { type: 'number', minimum: 0, maximum: 10 }, '9.99', true],
    ['integer in [100, 200]', { type: 'integer', minimum: 100, maximum: 200 }, '150', true],
    ['integer below [100, 200]', { type: 'integer', minimum: 100, maximum: 200 }, '15', false],
    ['exclusiveMinimum (2020-12 number form)', { type: 'integer', exclusiveMinimum: 0 }, '0', false],
    ['exclusiveMaximum (draft-4 flag)', { type: 'number', maximum: 1, exclusiveMaximum: true }, '1', false],
    ['a leading zero', { type: 'number' }, '01', false],
    ['an exponent', { type: 'number' }, '-1.5e+3', true],
    ['array bounds', { type: 'array', items: { type: 'boolean' }, minItems: 1, maxItems: 2 }, '[true,false]', true],
    ['fewer than minItems', { type: 'array', items: { type: 'boolean' }, minItems: 1, maxItems: 2 }, '[]', false],
    ['more than maxItems', { type: 'array', items: { type: 'boolean' }, minItems: 1, maxItems: 2 }, '[true, true, true]', false],
    ['prefixItems', { type: 'array', prefixItems: [{ type: 'string' }, { type: 'integer' }], items: false }, '["a", 1]', true],
    ['prefixItems with an item too many', { type: 'array', prefixItems: [{ type: 'string' }], items: false }, '["a", 1]', false],
    ['pattern', { type: 'string', pattern: '^[a-z]+$' }, '"abc"', true],
    ['pattern violated', { type: 'string', pattern: '^[a-z]+$' }, '"abC"', false],
    ['unanchored pattern matches anywhere', { type: 'string', pattern: 'b+c' }, '"xxbbcyy"', true],
    ['format date', { type: 'string', format: 'date' }, '"2024-01-31"', true],
    ['format date: no 30 February', { type: 'string', format: 'date' }, '"2024-02-30"', false],
    ['format uuid', { type: 'string', format: 'uuid' }, '"123e4567-e89b-12d3-a456-426614174000"', true],
    ['maxLength counts characters, not bytes', { type: 'string', maxLength: 3 }, '"héé"', true],
    ['longer than maxLength', { type: 'string', maxLength: 3 }, '"héée"', false],
    ['escapes count as one character', { type: 'string', minLength: 2, maxLength: 2 }, '"\\u00e9\\n"', true],
    ['a raw control character in a string', { type: 'string' }, '"a\nb"', false],
    ['a lone surrogate escape', { type: 'string' }, '"\\ud800"', false],
    ['invalid UTF-8 (overlong)', { type: 'string' }, Uint8Array.of(0x22, 0xc0, 0xaf, 0x22), false],
    ['enum of mixed values', { enum: ['red', 'green', 1, null] }, '"green"', true],
    ['enum number', { enum: ['red', 'green', 1, null] }, '1', true],
    ['not in the enum', { enum: ['red', 'green', 1, null] }, '12', false],
    ['anyOf', { anyOf: [{ type: 'string' }, { type: 'null' }] }, 'null', true],
    ['a type list', { type: ['string', 'null'] }, '"x"', true],
    ['nullable (OpenAPI)', { type: 'integer', nullable: true }, 'null', true],
    ['oneOf of disjoint types', { oneOf: [{ type: 'string' }, { type: 'integer' }] }, '7', true],
    ['recursive $ref', { $defs: { n: { type: 'object', properties: { c: { type: 'array', items: { $ref: '#/$defs/n' } } }, required: ['c'] } }, $ref: '#/$defs/n' }, '{"c":[{"c":[]},{"c":[{"c":[]}]}]}', true],
    ['json_object members of any kind', { type: 'object', additionalProperties: true }, '{"x": {"y": [1, "2", null]}, "z": 1e5}', true],
    ['leading whitespace (after a think block)', { type: 'boolean' }, '\n\ntrue', true],
    ['text after the document', { type: 'boolean' }, 'true x', false],
  ];
  for (const [name, schema, text, want] of cases) {
    it(`${name}: ${want ? 'accepted' : 'refused'}`, () => {
      expect(accepts(schema, text)).toBe(want);
      // the test's own expectation agrees with the specification's validator where the text is JSON
      let parsed: unknown;
      try { parsed = JSON.parse(typeof text === 'string' ? text : ''); } catch { return; }
      if (want) expect(validate(parsed, schema)).toBeNull();
    });
  }
});

describe('JSON Schema grammar: what it refuses, by name', () => {
  const refused: [unknown, RegExp][] = [
    [{ not: { type: 'string' } }, /keyword "not" is not supported/],
    [{ type: 'object', patternProperties: { '^x': {} } }, /"patternProperties" is not supported/],
    [{ if: {}, then: {} }, /"if" is not supported/],
    [{ type: 'array', uniqueItems: true }, /"uniqueItems" is not supported/],
    [{ type: 'number', multipleOf: 2 }, /"multipleOf" is not supported/],
    [{ allOf: [{ type: 'string' }, { maxLength: 3 }] }, /"allOf" is supported with one schema only/],
    [{ type: 'string', format: 'ipv6' }, /format "ipv6" is not supported/],
    [{ type: 'string', pattern: '(?=a)b' }, /lookaround/],
    [{ type: 'string', pattern: '(a)\\1' }, /back-references/],
    [{ $ref: 'https://example.com/s.json' }, /only references inside the schema/],
    [{ $ref: '#/$defs/missing' }, /points nowhere/],
    [{ oneOf: [{ type: 'string' }, { type: 'string', maxLength: 2 }] }, /oneOf alternatives that one value could match/],
    [{ type: 'integer', minimum: 5, maximum: 4 }, /no number lies between the bounds/],
    [{ type: 'tuple' }, /not a JSON Schema type/],
    [false, /accepts no value/],
  ];
  for (const [schema, msg] of refused) {
    it(JSON.stringify(schema), () => {
      expect(() => compileSchema(schema)).toThrow(SchemaError);
      expect(() => compileSchema(schema)).toThrow(msg);
    });
  }
  it('annotations are not constraints: title, description, default, examples pass', () => {
    expect(() => compileSchema({ type: 'string', title: 't', description: 'd', default: 'x', examples: ['y'], $schema: 'https://json-schema.org/draft/2020-12/schema' })).not.toThrow();
  });
});

describe('tool-call grammar', () => {
  const tools = [
    { type: 'function', function: { name: 'get_weather', parameters: { type: 'object', properties: { city: { type: 'string' }, days: { type: 'integer', minimum: 1, maximum: 7 }, units: { enum: ['c', 'f'] } }, required: ['city'] } } },
    { type: 'function', function: { name: 'noop', parameters: { type: 'object', properties: {} } } },
  ];
  const g = toolCallGrammar(tools);
  const call = (t: string) => walkBytes([callStart((g as { tools: never }).tools)], te.encode(t)).some(canEnd);
  it('a declared tool with its required parameter, raw string and JSON integer values', () => {
    expect(call('<tool_call>\n<function=get_weather>\n<parameter=city>\nParis, FR\n</parameter>\n<parameter=days>\n3\n</parameter>\n</function>\n</tool_call>')).toBe(true);
  });
  it('a string value is raw text (newlines and quotes as they are)', () => {
    expect(call('<tool_call>\n<function=get_weather>\n<parameter=city>\nline "one"\nline two\n</parameter>\n</function>\n</tool_call>')).toBe(true);
  });
  it('an enum value without a type is JSON (the parser types it so)', () => {
    expect(call('<tool_call>\n<function=get_weather>\n<parameter=city>\nX\n</parameter>\n<parameter=units>\n"f"\n</parameter>\n</function>\n</tool_call>')).toBe(true);
  });
  it('refused: a missing required parameter, an undeclared tool, a value out of range, a value holding the closing tag', () => {
    expect(call('<tool_call>\n<function=get_weather>\n<parameter=days>\n3\n</parameter>\n</function>\n</tool_call>')).toBe(false);
    expect(call('<tool_call>\n<function=nope>\n</function>\n</tool_call>')).toBe(false);
    expect(call('<tool_call>\n<function=get_weather>\n<parameter=city>\nA\n</parameter>\n<parameter=days>\n8\n</parameter>\n</function>\n</tool_call>')).toBe(false);
    expect(call('<tool_call>\n<function=get_weather>\n<parameter=city>\nA</parameter>\n</parameter>\n</function>\n</tool_call>')).toBe(false);
  });
  it('several calls in a row', () => {
    expect(call('<tool_call>\n<function=noop>\n</function>\n</tool_call>\n<tool_call>\n<function=noop>\n</function>\n</tool_call>')).toBe(true);
  });
  it('a named choice admits that tool only', () => {
    const one = toolCallGrammar(tools, 'noop') as { tools: never };
    expect(walkBytes([callStart(one.tools)], te.encode('<tool_call>\n<function=get_weather>')).length).toBe(0);
  });
  it('a tool schema with an unsupported keyword is refused naming it and the tool', () => {
    expect(() => toolCallGrammar([{ type: 'function', function: { name: 'f', parameters: { type: 'object', properties: { a: { not: {} } } } } }])).toThrow(/"not" is not supported/);
  });
});

/** Every token tried one by one from the state: the mask the trie walk must equal. */
function bruteMask(tok: Tokenizer, states: Stack[], calls: boolean): Set<number> {
  const idx = vocabIndex(tok), out = new Set<number>();
  for (let id = 0; id < tok.tokens.length; id++) {
    const ty = tok.types[id];
    if (idx.stopIds.includes(id)) { if (states.some(canEnd)) out.add(id); continue; }
    if (!(ty === 1 || ty === 6 || (calls && idx.protocol.includes(id)))) continue;
    const b = tok.bytesOf(id);
    if (b.length && walkBytes(states, b).length) out.add(id);
  }
  return out;
}

describe('token masks', () => {
  const tinyA = new Tokenizer(readGguf(fixture('tinyA', 'tinyA-q2.gguf')));
  const schemas: unknown[] = [
    { type: 'object', properties: { name: { type: 'string', maxLength: 12 }, age: { type: 'integer', minimum: 0, maximum: 150 }, tags: { type: 'array', items: { enum: ['a', 'bb', 'ccc'] } } }, required: ['name', 'age'] },
    { type: 'object', additionalProperties: true },
    { anyOf: [{ type: 'number', minimum: -5, maximum: 5 }, { type: 'string', pattern: '^[A-Z][a-z]*$' }, { type: 'null' }] },
  ];
  // a random walk through each grammar: at every step the trie walk's mask equals trying each token
  for (const [i, schema] of schemas.entries()) {
    it(`schema ${i}: the mask at each step of a random walk is exactly the tokens the grammar accepts (tinyA vocabulary)`, () => {
      let seed = 7 + i;
      const rand = () => ((seed = (Math.imul(seed, 1103515245) + 12345) >>> 0) / 2 ** 32);
      const idx = vocabIndex(tinyA);
      let states: Stack[] = [docStart(compileSchema(schema))];
      for (let step = 0; step < 40; step++) {
        const m = computeMask(idx, states);
        const want = bruteMask(tinyA, states, false);
        const got = new Set<number>();
        for (let id = 0; id < tinyA.tokens.length; id++) if (maskHas(m, id)) got.add(id);
        expect([...got].filter((x) => !want.has(x))).toEqual([]);
        expect([...want].filter((x) => !got.has(x))).toEqual([]);
        expect(m.count).toBe(want.size);
        const choices = [...want].filter((x) => !idx.stopIds.includes(x));
        if (!choices.length) break;
        states = walkBytes(states, tinyA.bytesOf(choices[Math.floor(rand() * choices.length)]));
      }
    });
  }
  it('over a vocabulary of the real size (248,320 byte strings): the plain-character classes give the same masks as trying each token', () => {
    const big = vocabFileTokenizer(fixture('grammar', 'bpe-vocab-248k.bin.gz'));
    const idx = vocabIndex(big);
    const node = compileSchema({ type: 'object', properties: { s: { type: 'string', maxLength: 5 }, k: { type: 'object', additionalProperties: { type: 'string' } } }, required: ['s', 'k'] });
    for (const prefix of ['{"s": "ab', '{"s": "abc", "k": {"x', '{"s": "', '{"s": "a", "k": {"y": "free text ']) {
      const states = walkBytes([docStart(node)], te.encode(prefix));
      expect(states.length).toBeGreaterThan(0);
      const m = computeMask(idx, states);
      const want = bruteMask(big, states, false);
      expect(m.count).toBe(want.size);
      for (const id of want) expect(maskHas(m, id)).toBe(true);
    }
  }, 120_000);
});

describe('the shortest completion', () => {
  const tinyA = new Tokenizer(readGguf(fixture('tinyA', 'tinyA-q2.gguf')));
  const schema = { type: 'object', properties: { s: { type: 'string', minLength: 3, pattern: '^[a-c]+$' }, n: { type: 'integer', minimum: 100, maximum: 200 }, l: { type: 'array', items: { type: 'boolean' }, minItems: 2 }, e: { enum: ['yes', 'no'] } }, required: ['s', 'n', 'l', 'e'] };
  for (const prefix of ['', '{', '{"s": "a', '{"n": 1', '{"l": [true', '{"e": "y', '{"s": "abc", "n": 150, "l": [']) {
    it(`from ${JSON.stringify(prefix)}: the completed text is a valid document`, () => {
      const c = new Constraint(jsonGrammar(schema), tinyA);
      for (const id of tinyA.encode(prefix)) expect(c.accept(id)).toBe(true);
      const rest = c.completion();
      for (const id of rest) expect(c.accept(id)).toBe(true);
      expect(c.canEnd()).toBe(true);
      const text = prefix + tinyA.decode(rest);
      expect(validate(JSON.parse(text), schema)).toBeNull();
    });
  }
});
