/**
 * bench-ttft: time to the first streamed text of a long prompt through the server, as an agent
 * opening a session sees it — a streamed /v1/chat/completions request over loopback to the
 * q36-server app in this process, cold (nothing cached), then the same request again (its prefix
 * cached). The prompt: --bytes bytes of --prompt-file (repeated as needed) as one user message.
 *
 *   node dist/scripts/bench/bench-ttft.js -m /tmp/full-q2.gguf [--bytes 25000] [--ctx 32768] [--prompt-file fixtures/bench/lighthouse.txt]
 *   (where node_modules is absent, e.g. the GPU machine: bundle it first, with a require for the
 *   server's CommonJS packages:
 *   npx esbuild dist/scripts/bench/bench-ttft.js --bundle --platform=node --format=esm \
 *     "--banner:js=import { createRequire as __q36req } from 'node:module'; const require = __q36req(import.meta.url);" \
 *     --outfile=dist/scripts/bench-ttft.bundle.mjs)
 */
import { readFileSync } from 'node:fs';
import { parseArgs } from 'node:util';
import { openEngine } from '../../ts/engine/index.js';
import { envEngineOptions } from '../../ts/cli/env.js';
import { buildApp } from '../../ts/server/app.js';
import { sseEvents } from '../lib/sse-events.js';

const { values: a } = parseArgs({ options: {
  model: { type: 'string', short: 'm' }, bytes: { type: 'string', default: '25000' }, ctx: { type: 'string', default: '32768' },
  'prompt-file': { type: 'string', default: 'fixtures/bench/lighthouse.txt' }, backend: { type: 'string', default: 'vulkan' },
} });
if (!a.model) { console.error('bench-ttft: -m MODEL is required'); process.exit(2); }
// the file's text repeated until it is --bytes long (the bench text is shorter than an agent's prompt)
const src = readFileSync(a['prompt-file']!, 'utf8');
if (!src.length) { console.error(`bench-ttft: ${a['prompt-file']} is empty`); process.exit(2); }
const text = src.repeat(Math.ceil(Number(a.bytes) / src.length)).slice(0, Number(a.bytes));
const engine = await openEngine({ ...envEngineOptions(), model: a.model, backend: a.backend as 'vulkan' | 'cpu', ctx: Number(a.ctx), kvTypes: { k: 'q8_0', v: 'q4_0' } });
const { app, ctx } = await buildApp({ engine, slots: 1, maxQueue: 4, defaultMaxTokens: 8, cacheRamMiB: 0 });
const base = await app.listen({ host: '127.0.0.1', port: 0 });
console.log(`# bench-ttft ${a.model}; ${new Date().toISOString()}; ${text.length} bytes from ${a['prompt-file']}`);
console.log(engine.describe());

/** Seconds to the first chunk carrying text (content or reasoning), and to the end of the stream. */
async function once(label: string): Promise<void> {
  const t0 = performance.now();
  const r = await fetch(`${base}/v1/chat/completions`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify({ model: 'x', messages: [{ role: 'user', content: text }], max_tokens: 8, temperature: 0, stream: true }) });
  if (r.status !== 200) throw new Error(`HTTP ${r.status}: ${await r.text()}`);
  let first = 0;
  // an empty delta is a keep-alive during the prefill, not text
  for await (const ev of sseEvents(r.body!)) if (!first && ev.startsWith('data: {') && /"(content|reasoning_content)":"[^"]/.test(ev)) first = performance.now();
  const end = performance.now();
  console.log(`${label}: first streamed text after ${first ? ((first - t0) / 1000).toFixed(2) : '—'} s, done after ${((end - t0) / 1000).toFixed(2)} s`);
}
await once('cold');
await once('again');
await app.close();
ctx.coordinator.dispose();
engine.dispose();
