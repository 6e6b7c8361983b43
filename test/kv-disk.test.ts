import { spawn } from 'node:child_process';
import * as fs from 'node:fs';
import * as path from 'node:path';
import { describe, expect, it } from 'vitest';
import OpenAI from 'openai';
import { openEngine } from '../ts/engine/index.js';
import { buildApp } from '../ts/server/app.js';
import { DiskCache } from '../ts/server/kv-disk/disk-cache.js';
import { decodeFile, encodeFile, KvcError } from '../ts/kvc/format.js';
import { Rng } from '../ts/model/synth.js';
import { fixture, tmpDir } from './helpers.js';
import type { KvType } from '../ts/engine/types.js';
import { modelIdentity } from '../ts/model/fingerprint.js';
import { CRC_OFFSET, HEADER_BYTES } from '../ts/kvc/format.js';

const ROOT = path.resolve(__dirname, '..');
const policy = { minTokens: 64, coldMaxTokens: 4000, trimTokens: 8, alignTokens: 64, continuedIntervalTokens: 100000 };
const longText = fs.readFileSync(path.join(ROOT, 'fixtures/bench/lighthouse.txt'), 'utf8').slice(0, 1500);

async function server(dir: string, o: { model?: string; kv?: { k: KvType; v: KvType } } = {}) {
  const engine = await openEngine({ model: fixture(o.model ?? 'tinyA/tinyA-q2.gguf'), backend: 'cpu', ctx: 4096, kvTypes: o.kv });
  const logs: string[] = [];
  const { app, ctx } = await buildApp({ engine, defaultMaxTokens: 4, kvDisk: { dir, spaceMiB: 64, ...policy }, log: (m) => logs.push(m) });
  const base = await app.listen({ host: '127.0.0.1', port: 0 });
  return { app, ctx, logs, client: new OpenAI({ baseURL: `${base}/v1`, apiKey: 'x' }) };
}

/** A directory with the cold-save files of one long prompt, written by a default (tinyA q2, f16 KV) server. */
async function coldFileFromDefaultServer() {
  const dir = tmpDir();
  const s1 = await server(dir);
  const msgs: OpenAI.ChatCompletionMessageParam[] = [{ role: 'system', content: longText }, { role: 'user', content: 'Summarise.' }];
  await s1.client.chat.completions.create({ model: 'x', messages: msgs, max_tokens: 2, temperature: 0 });
  await s1.app.close();
  return { dir, msgs };
}

/** a stand-in model identity for the file-level tests */
const MODEL = { fingerprint: Buffer.alloc(32, 0x5a), expertBits: 2 };

describe('disk KV cache', () => {
  it('a long prompt is saved cold; after a restart the same prompt + suffix prefills only the suffix', async () => {
    const dir = tmpDir();
    const s1 = await server(dir);
    const msgs: OpenAI.ChatCompletionMessageParam[] = [{ role: 'system', content: longText }, { role: 'user', content: 'Summarise.' }];
    const r1 = await s1.client.chat.completions.create({ model: 'x', messages: msgs, max_tokens: 2, temperature: 0 });
    expect(s1.ctx.coordinator.stats.diskSaves).toBeGreaterThanOrEqual(1);
    const files = fs.readdirSync(dir).filter((f) => f.endsWith('.kv'));
    expect(files.length).toBeGreaterThanOrEqual(1);
    const f = decodeFile(fs.readFileSync(path.join(dir, files[0])));
    expect(f.header.reason).toBe('cold');
    expect(f.header.tokens % policy.alignTokens).toBe(0);
    expect(f.header.tokens).toBeLessThanOrEqual(r1.usage!.prompt_tokens - policy.trimTokens);
    expect(files[0]).toBe(DiskCache.nameFor(f.text));
    await s1.app.close();

    const s2 = await server(dir); // restart: empty live session
    const r2 = await s2.client.chat.completions.create({ model: 'x', messages: [{ role: 'system', content: longText }, { role: 'user', content: 'Summarise. Then list the characters.' }], max_tokens: 2, temperature: 0 });
    expect(s2.ctx.coordinator.stats.diskLoads).toBe(1);
    expect(r2.usage!.prompt_tokens_details!.cached_tokens).toBe(f.header.tokens);
    expect(s2.ctx.coordinator.stats.prefilled).toBe(r2.usage!.prompt_tokens - f.header.tokens);
    await s2.app.close();
  });

  it('a shutdown save in the middle of an answer holds what it says: after a restart the same request answers its prompt, not the partial answer (#45 item 1)', async () => {
    const msgs: OpenAI.ChatCompletionMessageParam[] = [{ role: 'system', content: longText }, { role: 'user', content: 'Tell the story again.' }];
    const req = { model: 'x', messages: msgs, max_tokens: 12, temperature: 0 };
    // the answer of a server that never saw the request (no cache)
    const fresh = await server(tmpDir());
    const want = await fresh.client.chat.completions.create(req);
    await fresh.app.close();
    // a long answer interrupted by the shutdown save after a few streamed chunks
    const dir = tmpDir();
    const s1 = await server(dir);
    const stream = await s1.client.chat.completions.create({ ...req, max_tokens: 200, stream: true });
    let chunks = 0;
    for await (const c of stream) {
      if (c.choices[0]?.delta?.content || c.choices[0]?.delta && 'reasoning_content' in c.choices[0].delta) chunks++;
      if (chunks === 6) { await s1.ctx.coordinator.saveLive('shutdown'); break; }
    }
    await s1.app.close();
    const s2 = await server(dir);
    const got = await s2.client.chat.completions.create(req);
    await s2.app.close();
    expect(got.usage!.prompt_tokens).toBe(want.usage!.prompt_tokens);
    expect(got.usage!.prompt_tokens_details!.cached_tokens).toBeLessThanOrEqual(got.usage!.prompt_tokens);
    expect(got.choices[0].message.content).toBe(want.choices[0].message.content);
    expect((got.choices[0].message as { reasoning_content?: string }).reasoning_content).toBe((want.choices[0].message as { reasoning_content?: string }).reasoning_content);
  });

  it('tool-id replay survives a restart through the cache files', async () => {
    const dir = tmpDir();
    const s1 = await server(dir);
    const raw = '<tool_call>\n<function=lookup>\n<parameter=q>\nkeeper\n</parameter>\n</function>\n</tool_call>';
    const id = s1.ctx.tools.newId();
    s1.ctx.tools.remember([id], { reasoning: '', content: raw });
    const tools = [{ type: 'function' as const, function: { name: 'lookup', parameters: { type: 'object', properties: { q: { type: 'string' } } } } }];
    const history: OpenAI.ChatCompletionMessageParam[] = [
      { role: 'user', content: 'Who kept the light?' },
      { role: 'assistant', content: null, tool_calls: [{ id, type: 'function', function: { name: 'lookup', arguments: '{"q":"keeper"}' } }] },
      { role: 'tool', tool_call_id: id, content: longText },
    ];
    await s1.client.chat.completions.create({ model: 'x', messages: history, tools, max_tokens: 2 });
    const saved = fs.readdirSync(dir).filter((x) => x.endsWith('.kv')).map((x) => decodeFile(fs.readFileSync(path.join(dir, x))));
    expect(saved.some((x) => x.tools.get(id) === raw)).toBe(true);
    await s1.app.close();
    const s2 = await server(dir);
    expect(s2.ctx.tools.recall(id)).toBeUndefined();
    await s2.client.chat.completions.create({ model: 'x', messages: [...history, { role: 'user', content: 'ok' }], tools, max_tokens: 2 });
    expect(s2.ctx.tools.recall(id)?.content).toBe(raw);
    await s2.app.close();
  });

  it('evicts least-recently-used files to stay within the budget', () => {
    const dir = tmpDir();
    const c = new DiskCache({ dir, budgetBytes: 2500, model: MODEL });
    const payload = new Uint8Array(1000);
    const a = c.save({ reason: 'cold', text: 'a', payload, tokens: 1, ctx: 8 });
    const b = c.save({ reason: 'cold', text: 'b', payload, tokens: 1, ctx: 8 });
    // make a the most recently used, then a third file forces one eviction: b goes
    const fa = decodeFile(fs.readFileSync(a));
    fa.header.lastUsed += 100;
    fs.writeFileSync(a, encodeFile(fa));
    c.save({ reason: 'cold', text: 'c', payload, tokens: 1, ctx: 8 });
    expect(fs.existsSync(a)).toBe(true);
    expect(fs.existsSync(b)).toBe(false);
  });

  it('lookups see files changed, replaced or removed behind the cache (the in-memory index revalidates)', () => {
    const dir = tmpDir();
    const c = new DiskCache({ dir, budgetBytes: 1 << 30, model: MODEL });
    const payload = new Uint8Array(64);
    const f = c.save({ reason: 'cold', text: 'alpha beta', payload, tokens: 2, ctx: 8 });
    expect(c.lookup('alpha beta gamma')?.text).toBe('alpha beta');
    // another process rewrites the same file name with a different text
    const other = decodeFile(fs.readFileSync(f));
    other.text = 'alpha';
    fs.writeFileSync(f, encodeFile(other));
    expect(c.lookup('alpha beta gamma')?.text).toBe('alpha');
    fs.rmSync(f);
    expect(c.lookup('alpha beta gamma')).toBeUndefined();
    expect(c.entries()).toEqual([]);
  });

  it('truncated (every 1 KiB) and bit-flipped files are rejected cleanly and removed', () => {
    const dir = tmpDir();
    const c = new DiskCache({ dir, budgetBytes: 1 << 30, model: MODEL });
    const rng = new Rng(1);
    const payload = new Uint8Array(5000).map(() => rng.int(0, 255));
    const file = c.save({ reason: 'cold', text: 'prefix text', payload, tokens: 3, ctx: 16, tools: new Map([['call_a', '<tool_call>x</tool_call>']]) });
    const good = fs.readFileSync(file);
    expect(decodeFile(good).tools.get('call_a')).toBe('<tool_call>x</tool_call>');
    for (let cut = 0; cut < good.length; cut += 1024) {
      fs.writeFileSync(file, good.subarray(0, cut));
      expect(c.load(file)).toBeUndefined();
      expect(fs.existsSync(file)).toBe(cut < 3 ? true : false); // ours (KVC magic) and corrupt → deleted
      fs.rmSync(file, { force: true });
    }
    for (let i = 0; i < 20; i++) {
      const bad = Buffer.from(good);
      const at = 52 + rng.int(0, bad.length - 53);
      bad[at] ^= 1 << rng.int(0, 7);
      fs.writeFileSync(file, bad);
      expect(c.load(file)).toBeUndefined();
    }
    expect(() => decodeFile(Buffer.from('not a cache file at all, definitely not'))).toThrow(KvcError);
    fs.writeFileSync(path.join(dir, 'foreign.kv'), 'hello');
    expect(c.lookup('hello world')).toBeUndefined();
    expect(fs.existsSync(path.join(dir, 'foreign.kv'))).toBe(true); // not ours: left alone
  });

  it('kill -9 during a save leaves no loadable partial file', async () => {
    const dir = tmpDir();
    const script = path.join(dir, 'saver.mjs');
    fs.writeFileSync(script, `import { DiskCache } from '${path.join(ROOT, 'dist/ts/server/kv-disk/disk-cache.js')}';
const c = new DiskCache({ dir: ${JSON.stringify(dir)}, budgetBytes: 1 << 40, model: { fingerprint: Buffer.alloc(32, 0x5a), expertBits: 2 } });
const payload = new Uint8Array(64 << 20);
for (let i = 0; ; i++) c.save({ reason: 'cold', text: 'text ' + i, payload, tokens: 1, ctx: 8 });`);
    const child = spawn(process.execPath, [script]);
    await new Promise((r) => setTimeout(r, 1500));
    child.kill('SIGKILL');
    await new Promise((r) => child.on('exit', r));
    const c = new DiskCache({ dir, budgetBytes: 1 << 40, model: MODEL }); // startup sweeps leftover temp files
    expect(fs.readdirSync(dir).filter((f) => f.endsWith('.tmp'))).toEqual([]);
    for (const f of fs.readdirSync(dir).filter((x) => x.endsWith('.kv'))) expect(c.load(path.join(dir, f))).toBeDefined();
  });

  it('a file written by another model of the same shapes (q2 vs q2q4) is skipped with the reason logged, and kept', async () => {
    const { dir, msgs } = await coldFileFromDefaultServer();
    const files = fs.readdirSync(dir).filter((f) => f.endsWith('.kv'));
    expect(files.length).toBeGreaterThanOrEqual(1);
    const s2 = await server(dir, { model: 'tinyA/tinyA-q2q4.gguf' });
    const r = await s2.client.chat.completions.create({ model: 'x', messages: msgs, max_tokens: 2, temperature: 0 });
    expect(s2.ctx.coordinator.stats.diskLoads).toBe(0);
    expect(r.usage!.prompt_tokens_details!.cached_tokens).toBe(0);
    expect(s2.logs.join('\n')).toMatch(/skipping [0-9a-f]+\.kv: written by another model/);
    for (const f of files) expect(fs.existsSync(path.join(dir, f))).toBe(true); // valid for its own model: not deleted
    await s2.app.close();
    // the two fingerprints differ although every shape is equal
    expect(modelIdentity(fixture('tinyA/tinyA-q2.gguf')).fingerprint.equals(modelIdentity(fixture('tinyA/tinyA-q2q4.gguf')).fingerprint)).toBe(false);
    expect(modelIdentity(fixture('tinyA/tinyA-q2.gguf')).expertBits).toBe(2);
  });

  it('a file with other KV types is skipped with the reason on the log (once), kept on disk, and the prompt prefilled', async () => {
    const { dir, msgs } = await coldFileFromDefaultServer();
    const s2 = await server(dir, { kv: { k: 'q8_0', v: 'q4_0' } });
    const r = await s2.client.chat.completions.create({ model: 'x', messages: msgs, max_tokens: 2, temperature: 0 });
    await s2.client.chat.completions.create({ model: 'x', messages: [msgs[0], { role: 'user', content: 'Other question.' }], max_tokens: 2, temperature: 0 });
    expect(r.usage!.prompt_tokens_details!.cached_tokens).toBe(0);
    const skips = s2.logs.filter((l) => /skipping .*KV types f16\/f16 differ/.test(l));
    expect(skips.length).toBe(1);
    expect(fs.readdirSync(dir).filter((f) => f.endsWith('.kv')).length).toBeGreaterThanOrEqual(1);
    await s2.app.close();
  });

  it('the CRC is always written and always checked: a 0 CRC with damaged rows is refused; version-1 files are skipped, not deleted', () => {
    const dir = tmpDir();
    const logs: string[] = [];
    const c = new DiskCache({ dir, budgetBytes: 1 << 30, model: MODEL, log: (m) => logs.push(m) });
    const file = c.save({ reason: 'cold', text: 'some prefix', payload: new Uint8Array(4096).fill(3), tokens: 3, ctx: 16 });
    const good = fs.readFileSync(file);
    expect(good.readUInt32LE(CRC_OFFSET)).not.toBe(0);
    const bad = Buffer.from(good);
    bad.writeUInt32LE(0, CRC_OFFSET);
    bad[bad.length - 100] ^= 0x40; // a damaged row
    fs.writeFileSync(file, bad);
    expect(c.load(file)).toBeUndefined();
    expect(logs.join('\n')).toMatch(/no checksum/);
    const v1 = Buffer.from(good);
    v1[3] = 1;
    const old = path.join(dir, 'old.kv');
    fs.writeFileSync(old, v1);
    expect(c.lookup('some prefix and more')).toBeUndefined();
    expect(logs.join('\n')).toMatch(/old\.kv: format version 1/);
    expect(fs.existsSync(old)).toBe(true);
    // a different fingerprint: foreign, not loaded, not deleted
    const other = new DiskCache({ dir: tmpDir(), budgetBytes: 1 << 30, model: { fingerprint: Buffer.alloc(32, 1), expertBits: 2 } });
    const f2 = other.save({ reason: 'cold', text: 'x', payload: new Uint8Array(16), tokens: 1, ctx: 8 });
    const moved = path.join(dir, path.basename(f2));
    fs.copyFileSync(f2, moved);
    expect(c.load(moved)).toBeUndefined();
    expect(fs.existsSync(moved)).toBe(true);
    expect(decodeFile(fs.readFileSync(moved)).fingerprint.equals(Buffer.alloc(32, 1))).toBe(true);
    expect(HEADER_BYTES).toBe(48);
  });
});
