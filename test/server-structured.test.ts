/**
 * Structured output through the server as SDK users call it (#49): chat `response_format`
 * (json_schema with the SDK's parse() helper, json_object, streamed), Responses `text.format`
 * with responses.parse(), forced tool calls on all three APIs, and the 400s that name a schema
 * keyword the decoder cannot enforce. tinyA is a random model: left alone it writes garbage, so
 * every parsed object and every valid call here is the grammar's doing; each is checked against
 * the request's schema by test/json-schema-check.ts.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import OpenAI from 'openai';
import Anthropic from '@anthropic-ai/sdk';
import type { FastifyInstance } from 'fastify';
import { openEngine } from '../ts/engine/index.js';
import { buildApp } from '../ts/server/app.js';
import { fixture } from './helpers.js';
import { validate } from './json-schema-check.js';

let app: FastifyInstance, base = '';
const openai = () => new OpenAI({ baseURL: `${base}/v1`, apiKey: 'x', maxRetries: 0 });
const anthropic = () => new Anthropic({ baseURL: base, apiKey: 'x', maxRetries: 0 });

beforeAll(async () => {
  const engine = await openEngine({ model: fixture('tinyA/tinyA-q2.gguf'), backend: 'cpu', ctx: 4096 });
  ({ app } = await buildApp({ engine, defaultMaxTokens: 200 }));
  base = await app.listen({ host: '127.0.0.1', port: 0 });
});
afterAll(async () => { await app.close(); });

const person = {
  type: 'object',
  properties: {
    name: { type: 'string', maxLength: 20 },
    age: { type: 'integer', minimum: 0, maximum: 130 },
    email: { type: 'string', format: 'email' },
    tags: { type: 'array', items: { enum: ['admin', 'user', 'guest'] }, maxItems: 3 },
    address: { anyOf: [{ type: 'null' }, { $ref: '#/$defs/addr' }] },
  },
  required: ['name', 'age', 'tags', 'address'],
  additionalProperties: false,
  $defs: { addr: { type: 'object', properties: { city: { type: 'string', maxLength: 12 }, zip: { type: 'string', pattern: '^\\d{5}$' } }, required: ['city', 'zip'], additionalProperties: false } },
};

// the same without the unbounded e-mail string: a random model closes it by chance only, and the
// SDK's parse() helpers refuse an answer that ran to its budget (finish_reason length)
const { email: _email, ...shortProps } = person.properties;
const personShort = { ...person, properties: shortProps };

const weather = { type: 'function' as const, function: { name: 'get_weather', description: 'Weather', parameters: { type: 'object', properties: { city: { type: 'string' }, days: { type: 'integer', minimum: 1, maximum: 7 }, units: { type: 'string', enum: ['c', 'f'] } }, required: ['city', 'days'] } } };
const search = { type: 'function' as const, function: { name: 'search_files', description: 'Search', parameters: { type: 'object', properties: { pattern: { type: 'string' }, paths: { type: 'array', items: { type: 'string' }, maxItems: 2 }, case_sensitive: { type: 'boolean' } }, required: ['pattern'] } } };
const schemaOf = (name: string) => [weather, search].find((t) => t.function.name === name)!.function.parameters;

describe('chat completions: response_format', () => {
  it('json_schema through the SDK parse() helper: a parsed object that validates, sampled over several seeds', async () => {
    for (const seed of [1, 2, 3]) {
      const r = await openai().chat.completions.parse({
        model: 'x', seed, temperature: 1, reasoning_effort: 'none' as never, max_tokens: 600,
        messages: [{ role: 'user', content: 'Describe a person as JSON.' }],
        response_format: { type: 'json_schema', json_schema: { name: 'person', strict: true, schema: personShort } },
      });
      const m = r.choices[0].message;
      expect(m.parsed).not.toBeNull();
      expect(validate(m.parsed, personShort)).toBeNull();
    }
  }, 120_000);

  it('json_schema streamed: the concatenated deltas are the document', async () => {
    const s = await openai().chat.completions.create({
      model: 'x', seed: 4, temperature: 1, reasoning_effort: 'none' as never, max_tokens: 200, stream: true,
      messages: [{ role: 'user', content: 'JSON.' }],
      response_format: { type: 'json_schema', json_schema: { name: 'person', schema: person } },
    });
    let text = '';
    for await (const c of s) text += c.choices[0]?.delta?.content ?? '';
    expect(validate(JSON.parse(text), person)).toBeNull();
  });

  it('json_object: an object, with thinking on (the constraint starts where the think block ends)', async () => {
    const r = await openai().chat.completions.create({
      model: 'x', seed: 5, temperature: 1, max_tokens: 300, reasoning_effort: 'minimal',
      messages: [{ role: 'user', content: 'Any JSON object.' }], response_format: { type: 'json_object' },
    });
    const v = JSON.parse(r.choices[0].message.content ?? '');
    expect(typeof v === 'object' && v !== null && !Array.isArray(v)).toBe(true);
  }, 120_000);

  it('a budget too small for the model to finish: the document is completed, finish_reason says length', async () => {
    const r = await openai().chat.completions.create({
      model: 'x', seed: 6, temperature: 1, reasoning_effort: 'none' as never, max_tokens: 40,
      messages: [{ role: 'user', content: 'JSON.' }], response_format: { type: 'json_schema', json_schema: { name: 'p', schema: person } },
    });
    expect(validate(JSON.parse(r.choices[0].message.content ?? ''), person)).toBeNull();
    expect(r.choices[0].finish_reason).toBe('length');
  });

  it('a keyword the decoder cannot enforce is a 400 naming it, never ignored', async () => {
    for (const [schema, kw] of [[{ type: 'object', properties: { a: { not: { type: 'string' } } } }, 'not'], [{ type: 'array', uniqueItems: true }, 'uniqueItems'], [{ type: 'string', format: 'hostname' }, 'format "hostname"']] as const) {
      const err = await openai().chat.completions.create({ model: 'x', messages: [{ role: 'user', content: 'x' }], response_format: { type: 'json_schema', json_schema: { name: 'a', schema: schema as never } } }).then(() => null, (e) => e);
      expect(err?.status).toBe(400);
      expect(err.message).toContain('response_format');
      expect(err.message).toContain(kw);
    }
    const err = await openai().chat.completions.create({ model: 'x', messages: [{ role: 'user', content: 'x' }], response_format: { type: 'yaml' } as never }).then(() => null, (e) => e);
    expect(err?.status).toBe(400);
    expect(err.message).toMatch(/response_format: type "yaml"/);
  });
});

describe('Responses: text.format', () => {
  it('responses.parse() gets output_parsed that validates', async () => {
    const r = await openai().responses.parse({
      model: 'x', temperature: 1, reasoning: { effort: 'none' } as never, max_output_tokens: 600, input: 'A person, as JSON.',
      text: { format: { type: 'json_schema', name: 'person', strict: true, schema: personShort } },
    });
    expect(r.status).toBe('completed');
    expect(r.output_parsed).not.toBeNull();
    expect(validate(r.output_parsed, personShort)).toBeNull();
  });

  it('an unsupported keyword in text.format is a 400 naming it', async () => {
    const err = await openai().responses.create({ model: 'x', input: 'x', text: { format: { type: 'json_schema', name: 'a', schema: { type: 'object', properties: {}, patternProperties: { x: {} } } } } }).then(() => null, (e) => e);
    expect(err?.status).toBe(400);
    expect(err.message).toMatch(/text\.format.*"patternProperties" is not supported/);
  });
});

describe('forced tool calls follow the declared tools and their schemas', () => {
  it('tool_choice "required": always a declared tool, arguments valid against its schema (8 sampled seeds)', async () => {
    for (let seed = 1; seed <= 8; seed++) {
      const r = await openai().chat.completions.create({
        model: 'x', seed, temperature: 1, reasoning_effort: 'none' as never, max_tokens: 160,
        tools: [weather, search], tool_choice: 'required', messages: [{ role: 'user', content: 'Go.' }],
      });
      const calls = r.choices[0].message.tool_calls ?? [];
      expect(calls.length).toBeGreaterThan(0);
      for (const c of calls as { function: { name: string; arguments: string } }[]) {
        expect(['get_weather', 'search_files']).toContain(c.function.name);
        expect(validate(JSON.parse(c.function.arguments), schemaOf(c.function.name))).toBeNull();
      }
    }
  }, 120_000);

  it('a named tool_choice: that tool, arguments valid', async () => {
    const r = await openai().chat.completions.create({
      model: 'x', seed: 9, temperature: 1, reasoning_effort: 'none' as never, max_tokens: 160,
      tools: [weather, search], tool_choice: { type: 'function', function: { name: 'search_files' } }, messages: [{ role: 'user', content: 'Find it.' }],
    });
    const c = (r.choices[0].message.tool_calls ?? [])[0] as { function: { name: string; arguments: string } };
    expect(c.function.name).toBe('search_files');
    expect(validate(JSON.parse(c.function.arguments), schemaOf('search_files'))).toBeNull();
  });

  it('Anthropic tool_choice any: a tool_use block whose input validates against input_schema', async () => {
    const tools = [{ name: 'get_weather', input_schema: weather.function.parameters as never }, { name: 'search_files', input_schema: search.function.parameters as never }];
    for (const temperature of [0, 1]) {
      const r = await anthropic().messages.create({ model: 'x', max_tokens: 160, temperature, tools, tool_choice: { type: 'any' }, thinking: { type: 'disabled' }, messages: [{ role: 'user', content: 'Go.' }] });
      const use = r.content.find((b) => b.type === 'tool_use') as { name: string; input: unknown } | undefined;
      expect(use).toBeDefined();
      expect(validate(use!.input, schemaOf(use!.name))).toBeNull();
      // a call the budget cut short is completed by the grammar and reported as max_tokens
      expect(['tool_use', 'max_tokens']).toContain(r.stop_reason);
    }
  });

  it('Responses tool_choice required: a function_call with valid arguments', async () => {
    const r = await openai().responses.create({
      model: 'x', temperature: 1, reasoning: { effort: 'none' } as never, max_output_tokens: 160, tool_choice: 'required', input: 'Go.',
      tools: [{ type: 'function', name: 'get_weather', strict: true, parameters: weather.function.parameters }],
    });
    const call = r.output.find((o) => o.type === 'function_call') as { name: string; arguments: string } | undefined;
    expect(call?.name).toBe('get_weather');
    expect(validate(JSON.parse(call!.arguments), weather.function.parameters)).toBeNull();
  });

  it('a forced tool whose schema the decoder cannot enforce is a 400 naming the keyword', async () => {
    const bad = { type: 'function' as const, function: { name: 'f', parameters: { type: 'object', properties: { a: { type: 'string' } }, if: { required: ['a'] }, then: {} } } };
    const err = await openai().chat.completions.create({ model: 'x', tools: [bad], tool_choice: 'required', messages: [{ role: 'user', content: 'x' }] }).then(() => null, (e) => e);
    expect(err?.status).toBe(400);
    expect(err.message).toMatch(/tools: .*"if" is not supported/);
  });
});

describe('strict tools the model calls by itself', () => {
  it('every tool strict: a schema keyword the decoder cannot enforce is a 400; without strict the same tools are accepted unconstrained', async () => {
    const tool = (strict: boolean) => ({ type: 'function' as const, function: { name: 'f', strict, parameters: { type: 'object', properties: { a: { type: 'string', format: 'hostname' } }, required: ['a'], additionalProperties: false } } });
    const err = await openai().chat.completions.create({ model: 'x', max_tokens: 2, tools: [tool(true)], messages: [{ role: 'user', content: 'x' }] }).then(() => null, (e) => e);
    expect(err?.status).toBe(400);
    expect(err.message).toMatch(/tools: .*format "hostname" is not supported/);
    const r = await openai().chat.completions.create({ model: 'x', max_tokens: 2, tools: [tool(false)], messages: [{ role: 'user', content: 'x' }] });
    expect(r.object).toBe('chat.completion');
  });
});

describe('response_format with tools the model may call', () => {
  it('the answer is the document or calls of the declared tools, each valid', async () => {
    for (let seed = 1; seed <= 4; seed++) {
      const r = await openai().chat.completions.create({
        model: 'x', seed, temperature: 1, reasoning_effort: 'none' as never, max_tokens: 200, tools: [weather],
        messages: [{ role: 'user', content: 'Go.' }], response_format: { type: 'json_schema', json_schema: { name: 'p', schema: person } },
      });
      const m = r.choices[0].message;
      if (m.tool_calls?.length) for (const c of m.tool_calls as { function: { name: string; arguments: string } }[]) expect(validate(JSON.parse(c.function.arguments), weather.function.parameters)).toBeNull();
      else expect(validate(JSON.parse(m.content ?? ''), person)).toBeNull();
    }
  }, 120_000);
});
