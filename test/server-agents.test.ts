/**
 * What coding agents send, through the official SDKs and their helpers (server-for-agents issue):
 * mid-conversation system messages, Claude Code's billing block, count_tokens, documents and
 * images, length refusals before a stream opens in each provider's shape, Responses tools of every
 * kind, forced tool calls, stop strings, thinking budgets, assistant prefill, logprobs, n,
 * previous_response_id, usage fields, probes and metrics, and a side request between two turns.
 */
import * as fs from 'node:fs';
import * as path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import OpenAI from 'openai';
import Anthropic from '@anthropic-ai/sdk';
import type { FastifyInstance } from 'fastify';
import { openEngine } from '../ts/engine/index.js';
import { buildApp } from '../ts/server/app.js';
import type { ServerContext } from '../ts/server/context.js';
import { renderChat } from '../ts/chat/render.js';
import { fixture, tmpDir } from './helpers.js';

const ROOT = path.resolve(__dirname, '..');
const story = fs.readFileSync(path.join(ROOT, 'fixtures/bench/lighthouse.txt'), 'utf8');
let app: FastifyInstance, ctx: ServerContext, base = '';
const trace = path.join(tmpDir(), 'trace.jsonl');
const openai = () => new OpenAI({ baseURL: `${base}/v1`, apiKey: 'x', maxRetries: 0 });
const anthropic = () => new Anthropic({ baseURL: base, apiKey: 'x', maxRetries: 0 });
const lastPrompt = () => { const l = fs.readFileSync(trace, 'utf8').trim().split('\n').map((x) => JSON.parse(x)).filter((x) => x.event === 'request'); return l[l.length - 1].prompt as string; };
const tok = () => ctx.coordinator.engine.tokenizer;

beforeAll(async () => {
  const engine = await openEngine({ model: fixture('tinyA/tinyA-q2.gguf'), backend: 'cpu', ctx: 4096 });
  ({ app, ctx } = await buildApp({ engine, trace, defaultMaxTokens: 16 }));
  base = await app.listen({ host: '127.0.0.1', port: 0 });
});
afterAll(async () => { await app.close(); });

const weather = { type: 'function' as const, function: { name: 'get_weather', description: 'Weather', parameters: { type: 'object', properties: { city: { type: 'string' } }, required: ['city'] } } };

describe('Claude Code shapes (Anthropic SDK)', () => {
  it('a trailing role "system" message is accepted and joins the system prompt', async () => {
    const r = await anthropic().messages.create({ model: 'x', max_tokens: 4, system: 'Main system.', messages: [{ role: 'user', content: 'hi' }, { role: 'system', content: 'Available agent types: claude.' } as never] });
    expect(r.type).toBe('message');
    expect(lastPrompt().startsWith('<|im_start|>system\nMain system.\n\nAvailable agent types: claude.<|im_end|>')).toBe(true);
  });

  it('the per-request billing block is dropped, so the next request reuses the whole prefix', async () => {
    const sys = (cch: string) => [{ type: 'text' as const, text: `x-anthropic-billing-header: cc_version=2.1.1; cc_entrypoint=cli; cch=${cch};` }, { type: 'text' as const, text: story.slice(0, 2000) }];
    const a = await anthropic().messages.create({ model: 'x', max_tokens: 2, system: sys('aaaa1'), messages: [{ role: 'user', content: 'Summarise.' }] });
    expect(lastPrompt()).not.toContain('billing-header');
    const b = await anthropic().messages.create({ model: 'x', max_tokens: 2, system: sys('bbbb2'), messages: [{ role: 'user', content: 'Summarise.' }] });
    const total = a.usage.input_tokens + (a.usage.cache_read_input_tokens ?? 0);
    expect(b.usage.cache_read_input_tokens).toBeGreaterThanOrEqual(total - 1);
  });

  it('count_tokens (SDK countTokens) counts what a request would prefill', async () => {
    const params = { model: 'x', system: 'Be brief.', messages: [{ role: 'user' as const, content: 'How many tokens is this?' }], tools: [{ name: 'get_weather', input_schema: { type: 'object' as const, properties: { city: { type: 'string' } } } }] };
    const c = await anthropic().messages.countTokens(params);
    const expected = tok().encode(renderChat([{ role: 'system', content: 'Be brief.' }, { role: 'user', content: 'How many tokens is this?' }], { tools: [{ type: 'function', function: { name: 'get_weather', description: '', parameters: params.tools[0].input_schema } }] })).length;
    expect(c.input_tokens).toBe(expected);
  });

  it('messages.stream(): message_start carries the real input tokens; the helper assembles the message', async () => {
    const s = anthropic().messages.stream({ model: 'x', max_tokens: 6, messages: [{ role: 'user', content: 'Hello there' }] });
    let startTokens = -1;
    s.on('streamEvent', (e) => { if (e.type === 'message_start') startTokens = e.message.usage.input_tokens; });
    const m = await s.finalMessage();
    expect(startTokens).toBeGreaterThan(5);
    expect(m.usage.output_tokens).toBe(6);
    expect(m.content.length).toBeGreaterThan(0);
  });

  it('document blocks: text as text (with its title), other media as a clear placeholder', async () => {
    await anthropic().messages.create({ model: 'x', max_tokens: 2, messages: [{ role: 'user', content: [
      { type: 'document', title: 'Notes', source: { type: 'text', media_type: 'text/plain', data: 'The keeper was called Elin.' } },
      { type: 'document', source: { type: 'base64', media_type: 'application/pdf', data: 'JVBERi0=' } },
      { type: 'text', text: 'Who kept the light?' },
    ] }] });
    const p = lastPrompt();
    expect(p).toContain('Notes\n\nThe keeper was called Elin.');
    expect(p).toContain('[document (application/pdf) omitted: this server reads plain-text documents only]');
  });

  it('a prompt over the context is refused before the stream opens: 400 "prompt is too long: N tokens > M maximum"', async () => {
    const long = story.repeat(3);
    const n = tok().encode(renderChat([{ role: 'user', content: long }])).length;
    const err = await anthropic().messages.create({ model: 'x', max_tokens: 4, stream: true, messages: [{ role: 'user', content: long }] }).then(() => null, (e) => e);
    expect(err).toBeInstanceOf(Anthropic.BadRequestError);
    expect(err.error.error.type).toBe('invalid_request_error');
    expect(err.error.error.message).toBe(`prompt is too long: ${n} tokens > 4095 maximum`);
  });

  it('assistant prefill: a final assistant message is continued, not answered anew', async () => {
    const r = await anthropic().messages.create({ model: 'x', max_tokens: 3, messages: [{ role: 'user', content: 'Name a colour.' }, { role: 'assistant', content: 'The colour is' }] });
    expect(lastPrompt().endsWith('<|im_start|>assistant\n<think>\n\n</think>\n\nThe colour is')).toBe(true);
    expect(r.content.every((b) => b.type !== 'thinking')).toBe(true);
  });

  it('thinking.budget_tokens: the think block is closed for the model after that many tokens, and it answers', async () => {
    const r = await anthropic().messages.create({ model: 'x', max_tokens: 40, thinking: { type: 'enabled', budget_tokens: 6 }, messages: [{ role: 'user', content: 'Hello' }] });
    const thinking = r.content.find((b) => b.type === 'thinking') as { thinking: string } | undefined;
    // (re-encoding the text can take a few more tokens than were sampled; without the budget all 40 are thinking)
    expect(tok().encode(thinking?.thinking ?? '').length).toBeLessThanOrEqual(12);
    // tinyA thinks for ~1300 tokens on "Hello" by itself: here the answer starts right after the budget
    expect(r.content.some((b) => b.type === 'text' || b.type === 'tool_use') || r.stop_reason === 'end_turn').toBe(true);
  });

  it('tool_choice {type:"any"} and {type:"tool"} force a tool_use block', async () => {
    const tools = [{ name: 'get_weather', input_schema: { type: 'object' as const, properties: { city: { type: 'string' } } } }, { name: 'get_time', input_schema: { type: 'object' as const, properties: {} } }];
    const any = await anthropic().messages.create({ model: 'x', max_tokens: 40, tools, tool_choice: { type: 'any' }, thinking: { type: 'disabled' }, messages: [{ role: 'user', content: 'Weather?' }] });
    expect(lastPrompt().endsWith('<|im_start|>assistant\n<think>\n\n</think>\n\n')).toBe(true);
    const named = await anthropic().messages.create({ model: 'x', max_tokens: 40, tools, tool_choice: { type: 'tool', name: 'get_time' }, thinking: { type: 'disabled' }, messages: [{ role: 'user', content: 'Time?' }] });
    const use = named.content.find((b) => b.type === 'tool_use') as { name: string } | undefined;
    expect(use?.name).toBe('get_time');
    expect(any.content.some((b) => b.type === 'tool_use') || any.stop_reason === 'max_tokens').toBe(true);
  });

  it('HEAD / (sent before every Claude Code session), GET /health, /props and /metrics', async () => {
    expect((await fetch(base, { method: 'HEAD' })).status).toBe(200);
    expect(await (await fetch(`${base}/health`)).json()).toEqual({ status: 'ok' });
    const props = await (await fetch(`${base}/props`)).json() as { ctx: number; backend: string; kv_types: { k: string } };
    expect(props).toMatchObject({ ctx: 4096, backend: 'cpu', kv_types: { k: 'f16', v: 'f16' } });
    const m = await (await fetch(`${base}/metrics`)).text();
    expect(m).toMatch(/^q36_turns_total \d+$/m);
    expect(m).toMatch(/^q36_http_requests_total\{method="POST",route="\/v1\/messages",status="200"\} \d+$/m);
    expect(m).toMatch(/^q36_queue_depth 0$/m);
  });
});

describe('Codex shapes (Responses API, openai SDK)', () => {
  const codexTools = [
    { type: 'function', name: 'exec_command', description: 'Run', strict: false, parameters: { type: 'object', properties: { cmd: { type: 'string' } }, required: ['cmd'] } },
    { type: 'namespace', name: 'multi_agent_v1', description: 'Sub-agents.', tools: [{ type: 'function', name: 'close_agent', description: 'Close one', parameters: { type: 'object', properties: { id: { type: 'string' } } } }] },
    { type: 'custom', name: 'apply_patch', description: 'Patch files', format: { type: 'grammar', syntax: 'lark', definition: 'start: /.+/' } },
    { type: 'web_search', external_web_access: false },
  ];

  it('namespace, custom and hosted tools are accepted: functions flattened, hosted ones left out', async () => {
    const r = await openai().responses.create({ model: 'x', max_output_tokens: 4, tools: codexTools as never, input: [{ type: 'message', role: 'developer', content: [{ type: 'input_text', text: 'You are Codex.' }] }, { type: 'message', role: 'user', content: [{ type: 'input_text', text: 'hi' }] }] as never });
    expect(r.object).toBe('response');
    const p = lastPrompt();
    for (const name of ['exec_command', 'close_agent', 'apply_patch']) expect(p).toContain(`"name": "${name}"`);
    expect(p).not.toContain('web_search');
    expect(p).toContain('Sub-agents.');
  });

  it('a namespaced call comes back with its namespace; a custom tool as a custom_tool_call with its input', async () => {
    const ns = await openai().responses.create({ model: 'x', max_output_tokens: 60, reasoning: { effort: 'none' } as never, tools: codexTools as never, tool_choice: { type: 'function', name: 'close_agent' }, input: 'Close agent a1.' });
    const call = ns.output.find((o) => o.type === 'function_call') as { name: string; namespace?: string } | undefined;
    if (call) expect(call).toMatchObject({ name: 'close_agent', namespace: 'multi_agent_v1' });
    else expect(ns.status).toBe('incomplete'); // the budget ended inside the call
    const custom = await openai().responses.create({ model: 'x', max_output_tokens: 60, reasoning: { effort: 'none' } as never, tools: codexTools as never, tool_choice: { type: 'function', name: 'apply_patch' }, input: 'Patch it.' });
    const c = custom.output.find((o) => (o as { type: string }).type === 'custom_tool_call') as { name: string; input: string } | undefined;
    if (c) { expect(c.name).toBe('apply_patch'); expect(typeof c.input).toBe('string'); } else expect(custom.status).toBe('incomplete');
    // a custom call and its output sent back continue the conversation
    const r = await openai().responses.create({ model: 'x', max_output_tokens: 2, tools: codexTools as never, input: [{ role: 'user', content: 'Patch it.' }, { type: 'custom_tool_call', call_id: 'c1', name: 'apply_patch', input: '*** Begin Patch' }, { type: 'custom_tool_call_output', call_id: 'c1', output: 'Done' }] as never });
    expect(r.object).toBe('response');
    expect(lastPrompt()).toContain('*** Begin Patch');
  });

  it('responses.stream() with reasoning on: content parts announced before deltas, the helper completes', async () => {
    const s = openai().responses.stream({ model: 'x', input: 'Think about lighthouses.', max_output_tokens: 12 });
    const types: string[] = [];
    s.on('event', (e) => types.push(e.type));
    const final = await s.finalResponse();
    expect(types).toContain('response.reasoning_text.delta');
    expect(types.indexOf('response.content_part.added')).toBeLessThan(types.indexOf('response.reasoning_text.delta'));
    expect(final.status).toBe('incomplete');
    expect(final.incomplete_details?.reason).toBe('max_output_tokens');
    expect(final.usage!.output_tokens_details.reasoning_tokens).toBeGreaterThan(0);
  });

  it('a streamed prompt over the context is a 400 context_length_exceeded, not an in-stream error', async () => {
    const err = await openai().responses.create({ model: 'x', input: story.repeat(3), stream: true }).then(() => null, (e) => e);
    expect(err).toBeInstanceOf(OpenAI.BadRequestError);
    expect(err.code).toBe('context_length_exceeded');
    expect(err.message).toMatch(/maximum context length is 4096 tokens\. However, your messages resulted in \d+ tokens/);
  });

  it('previous_response_id continues a stored response (its prefix reused); an unknown id is previous_response_not_found', async () => {
    const a = await openai().responses.create({ model: 'x', instructions: 'Be brief.', input: 'First question?', max_output_tokens: 4, reasoning: { effort: 'none' } as never });
    const b = await openai().responses.create({ model: 'x', previous_response_id: a.id, input: 'Second question?', max_output_tokens: 4, reasoning: { effort: 'none' } as never });
    expect(b.previous_response_id).toBe(a.id);
    // reused up to where the first answer began (history re-renders it without its think block)
    const turnStart = tok().encode(renderChat([{ role: 'system', content: 'Be brief.' }, { role: 'user', content: 'First question?' }], { addGenerationPrompt: false }) + '<|im_start|>assistant\n').length;
    expect(b.usage!.input_tokens_details.cached_tokens).toBeGreaterThanOrEqual(turnStart);
    const p = lastPrompt();
    expect(p).toContain('First question?');
    expect(p).toContain('Second question?');
    const err = await openai().responses.create({ model: 'x', previous_response_id: 'resp_nope', input: 'x' }).then(() => null, (e) => e);
    expect(err.status).toBe(400);
    expect(err.code).toBe('previous_response_not_found');
  });

  it('images are refused by name in every API (no vision encoder); a tool result\'s image is named in its text', async () => {
    const img = 'data:image/png;base64,iVBORw0KGgo=';
    const e1 = await openai().responses.create({ model: 'x', max_output_tokens: 2, input: [{ role: 'user', content: [{ type: 'input_text', text: 'What is this?' }, { type: 'input_image', image_url: img, detail: 'auto' }] }] }).then(() => null, (e) => e);
    expect([e1.status, e1.message]).toEqual([400, expect.stringMatching(/input\[0\]\.content\[1\] is an image: this model reads text only/)]);
    const e2 = await openai().chat.completions.create({ model: 'x', max_tokens: 2, messages: [{ role: 'user', content: [{ type: 'text', text: 'What is this?' }, { type: 'image_url', image_url: { url: img } }] }] }).then(() => null, (e) => e);
    expect([e2.status, e2.message]).toEqual([400, expect.stringMatching(/messages\[0\]\.content\[1\] is an image: this model reads text only/)]);
    const e3 = await anthropic().messages.create({ model: 'x', max_tokens: 2, messages: [{ role: 'user', content: [{ type: 'image', source: { type: 'base64', media_type: 'image/png', data: 'iVBORw0KGgo=' } }] }] }).then(() => null, (e) => e);
    expect([e3.status, e3.message]).toEqual([400, expect.stringMatching(/an image block: this model reads text only/)]);
    await anthropic().messages.create({ model: 'x', max_tokens: 2, tools: [{ name: 'shot', input_schema: { type: 'object' } }], messages: [
      { role: 'user', content: 'Take a screenshot.' },
      { role: 'assistant', content: [{ type: 'tool_use', id: 'toolu_img', name: 'shot', input: {} }] },
      { role: 'user', content: [{ type: 'tool_result', tool_use_id: 'toolu_img', content: [{ type: 'text', text: 'done:' }, { type: 'image', source: { type: 'base64', media_type: 'image/png', data: 'iVBORw0KGgo=' } }] }] },
    ] });
    expect(lastPrompt()).toContain('done:[an image was returned here: this model reads text only]');
  });
});

describe('OpenAI chat completions (openai SDK)', () => {
  it('a streamed prompt over the context is a 400 before the stream opens (chat.completions.stream too)', async () => {
    const err = await openai().chat.completions.create({ model: 'x', stream: true, messages: [{ role: 'user', content: story.repeat(3) }] }).then(() => null, (e) => e);
    expect(err).toBeInstanceOf(OpenAI.BadRequestError);
    expect(err.code).toBe('context_length_exceeded');
    const ok = openai().chat.completions.stream({ model: 'x', max_tokens: 5, messages: [{ role: 'user', content: 'Hi' }] });
    const done = await ok.finalChatCompletion();
    expect(done.usage?.completion_tokens ?? 5).toBe(5);
  });

  it('stop strings are cut exactly where they begin, streamed or not, and never sent', async () => {
    const prompt = 'The lighthouse keeper said';
    const free = await openai().completions.create({ model: 'x', prompt, max_tokens: 24, temperature: 0 });
    const text = free.choices[0].text;
    expect(text.length).toBeGreaterThan(6);
    const stop = text.slice(3, 6);
    const cut = text.slice(0, text.indexOf(stop));
    const r = await openai().completions.create({ model: 'x', prompt, max_tokens: 24, temperature: 0, stop: [stop] });
    expect(r.choices[0].text).toBe(cut);
    expect(r.choices[0].finish_reason).toBe('stop');
    const s = await openai().completions.create({ model: 'x', prompt, max_tokens: 24, temperature: 0, stop: [stop], stream: true });
    let streamed = '';
    for await (const c of s) streamed += c.choices[0]?.text ?? '';
    expect(streamed).toBe(cut);
  });

  it('tool_choice "required" and named force the call; a named tool that does not exist is a 400', async () => {
    const time = { type: 'function' as const, function: { name: 'get_time', parameters: { type: 'object', properties: {} } } };
    const r = await openai().chat.completions.create({ model: 'x', max_tokens: 40, tools: [weather, time], tool_choice: { type: 'function', function: { name: 'get_time' } }, reasoning_effort: 'none' as never, messages: [{ role: 'user', content: 'Time?' }] });
    const calls = r.choices[0].message.tool_calls ?? [];
    if (calls.length) expect((calls[0] as { function: { name: string } }).function.name).toBe('get_time');
    else expect(r.choices[0].finish_reason).toBe('length');
    expect(lastPrompt()).toContain('"name": "get_time"');
    const err = await openai().chat.completions.create({ model: 'x', tools: [weather], tool_choice: { type: 'function', function: { name: 'nope' } }, messages: [{ role: 'user', content: 'x' }] }).then(() => null, (e) => e);
    expect(err.status).toBe(400);
    expect(err.message).toMatch(/tool_choice names "nope"/);
  });

  it('logprobs with top_logprobs: one entry per generated token, the chosen token among the alternatives at temperature 0', async () => {
    const r = await openai().chat.completions.create({ model: 'x', max_tokens: 6, temperature: 0, logprobs: true, top_logprobs: 3, messages: [{ role: 'user', content: 'Hi' }] });
    const lp = r.choices[0].logprobs!.content!;
    expect(lp.length).toBe(r.usage!.completion_tokens);
    for (const e of lp) {
      expect(e.top_logprobs.length).toBe(3);
      expect(e.logprob).toBeLessThanOrEqual(0);
      expect(e.top_logprobs[0].logprob).toBeGreaterThanOrEqual(e.top_logprobs[2].logprob);
      expect(e.logprob).toBeCloseTo(e.top_logprobs[0].logprob, 5); // greedy: the most likely token
      expect(Buffer.from(e.bytes).toString('utf8')).toBe(e.token);
    }
  });

  it('n=2 returns two choices; usage adds up their completions', async () => {
    const r = await openai().chat.completions.create({ model: 'x', max_tokens: 3, n: 2, temperature: 0.8, seed: 3, messages: [{ role: 'user', content: 'Hi' }] });
    expect(r.choices.map((c) => c.index)).toEqual([0, 1]);
    expect(r.usage!.completion_tokens).toBe(6);
  });

  it('reasoning_effort sets a thinking budget (reasoning tokens counted in usage)', async () => {
    const r = await openai().chat.completions.create({ model: 'x', max_tokens: 300, reasoning_effort: 'minimal', messages: [{ role: 'user', content: 'Hello' }] });
    const rt = r.usage!.completion_tokens_details!.reasoning_tokens!;
    expect(rt).toBeGreaterThan(0);
    expect(rt).toBeLessThanOrEqual(256 + 4); // "minimal": 256 tokens, then "\n</think>\n\n" is fed
  });
});

describe('a side request between two turns (in-memory prompt cache)', () => {
  it('does not cost the main conversation its prefix', async () => {
    const main: OpenAI.ChatCompletionMessageParam[] = [{ role: 'system', content: story.slice(0, 5800) }, { role: 'user', content: 'Who kept the light?' }];
    const t1 = await openai().chat.completions.create({ model: 'x', max_tokens: 8, temperature: 0, messages: main });
    expect(t1.usage!.prompt_tokens).toBeGreaterThan(2800); // a 3K-token conversation
    const turnStart = tok().encode(renderChat(main, { addGenerationPrompt: false }) + '<|im_start|>assistant\n').length;
    // the side request: another system prompt (opencode's title, Qwen Code's memory agent)
    await openai().chat.completions.create({ model: 'x', max_tokens: 4, messages: [{ role: 'system', content: 'Write a title.' }, { role: 'user', content: 'Who kept the light?' }] });
    const before = ctx.coordinator.stats.prefilled;
    const t2 = await openai().chat.completions.create({ model: 'x', max_tokens: 4, temperature: 0, messages: [...main, { role: 'assistant', content: t1.choices[0].message.content ?? '' }, { role: 'user', content: 'And then?' }] });
    const prefilled = ctx.coordinator.stats.prefilled - before;
    expect(t2.usage!.prompt_tokens_details!.cached_tokens).toBeGreaterThanOrEqual(turnStart);
    // the second turn prefills only what is new since the first turn's answer began
    expect(prefilled).toBe(t2.usage!.prompt_tokens - t2.usage!.prompt_tokens_details!.cached_tokens!);
    expect(prefilled).toBeLessThanOrEqual(t2.usage!.prompt_tokens - turnStart);
    expect(ctx.coordinator.stats.ramLoads).toBeGreaterThanOrEqual(1);
  });

  it('also when the side request shares the system prompt (a side query of the same agent)', async () => {
    const main: OpenAI.ChatCompletionMessageParam[] = [{ role: 'system', content: story.slice(0, 5000) }, { role: 'user', content: 'Who kept the light?' }];
    const t1 = await openai().chat.completions.create({ model: 'x', max_tokens: 6, temperature: 0, messages: main });
    const turnStart = tok().encode(renderChat(main, { addGenerationPrompt: false }) + '<|im_start|>assistant\n').length;
    await openai().chat.completions.create({ model: 'x', max_tokens: 3, messages: [main[0], { role: 'user', content: 'Summarise the conversation in five words.' }] });
    const loads = ctx.coordinator.stats.ramLoads;
    expect(ctx.coordinator.stats.ramSaves).toBeGreaterThanOrEqual(2);
    const t2 = await openai().chat.completions.create({ model: 'x', max_tokens: 3, temperature: 0, messages: [...main, { role: 'assistant', content: t1.choices[0].message.content ?? '' }, { role: 'user', content: 'And then?' }] });
    expect(t2.usage!.prompt_tokens_details!.cached_tokens).toBeGreaterThanOrEqual(turnStart);
    expect(ctx.coordinator.stats.ramLoads).toBe(loads + 1);
  });

  it('P1, P2, P1, P2: a request that hits its whole prefix in the cache still leaves a rewind point (#45 item 2)', async () => {
    const p1: OpenAI.ChatCompletionMessageParam[] = [{ role: 'system', content: story.slice(0, 5000) }, { role: 'user', content: 'Who kept the light?' }];
    const p2: OpenAI.ChatCompletionMessageParam[] = [{ role: 'system', content: 'Write a title.' }, { role: 'user', content: 'A story about a lighthouse.' }];
    const ask = (m: OpenAI.ChatCompletionMessageParam[]) => openai().chat.completions.create({ model: 'x', max_tokens: 3, temperature: 0, messages: m });
    const r1 = await ask(p1);
    await ask(p2);
    await ask(p1);
    const before = ctx.coordinator.evaluated;
    const r4 = await ask(p2);
    const spent = ctx.coordinator.evaluated - before;
    // keeping P1 and bringing P2 back costs P2's uncached tail, not P1's ~2.5K tokens again
    expect(r1.usage!.prompt_tokens).toBeGreaterThan(2000);
    expect(spent, `evaluated ${spent} tokens`).toBeLessThan(r4.usage!.prompt_tokens + 16);
  });

  it('the next turn of the same conversation does not copy the session into the cache', async () => {
    const main: OpenAI.ChatCompletionMessageParam[] = [{ role: 'system', content: 'Be brief.' }, { role: 'user', content: 'One?' }];
    const t1 = await openai().chat.completions.create({ model: 'x', max_tokens: 6, temperature: 0, messages: main });
    const before = ctx.coordinator.stats.ramSaves;
    await openai().chat.completions.create({ model: 'x', max_tokens: 3, temperature: 0, messages: [...main, { role: 'assistant', content: t1.choices[0].message.content ?? '' }, { role: 'user', content: 'Two?' }] });
    expect(ctx.coordinator.stats.ramSaves).toBe(before);
  });
});
