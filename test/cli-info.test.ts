import { spawnSync } from 'node:child_process';
import * as fs from 'node:fs';
import * as path from 'node:path';
import { describe, expect, it } from 'vitest';
import { fixture } from './helpers.js';

const ROOT = path.resolve(__dirname, '..');
const q36 = (...args: string[]) => spawnSync(process.execPath, [path.join(ROOT, 'dist/ts/cli/q36.js'), ...args], { encoding: 'utf8' });

describe('q36 --info', () => {
  it('prints the shape of every oracle GGUF', () => {
    for (const f of ['tinyA/tinyA-q2.gguf', 'tinyR/tinyR-bf16.gguf']) {
      const r = q36('--info', '-m', fixture(f));
      expect(r.status).toBe(0);
      expect(r.stdout).toMatch(/layers 4 \(3 Gated DeltaNet \+ 1 gated attention\)/);
      expect(r.stdout).toMatch(/status +OK/);
      expect(r.stdout).toMatch(/backends +cpu \(--cpu\) and vulkan/);
    }
  });
  it('says when only the CPU can run a file, and why', async () => {
    const { makeModel, PRESETS } = await import('../ts/model/synthetic-model.js');
    const dir = require('node:fs').mkdtempSync('/tmp/q36-cli-');
    const p = path.join(dir, 'wide.gguf');
    makeModel({ out: p, geometry: { ...PRESETS.tiny, headDim: 512, nRot: 64, nHead: 2, nHeadKv: 1 }, recipe: 'q8_0' });
    const r = q36('--info', '-m', p);
    expect(r.status).toBe(0);
    expect(r.stdout).toMatch(/backends +cpu \(--cpu\) only: Vulkan cannot run it: attention head dim 512 exceeds 256/);
  });
  it('fails with exit 2 and a one-line error for a missing or non-GGUF file', () => {
    const r = q36('--info', '-m', '/nonexistent.gguf');
    expect(r.status).toBe(2);
    expect(r.stderr).toMatch(/model file "\/nonexistent.gguf" not found/);
    const r2 = q36('--info', '-m', path.join(ROOT, 'package.json'));
    expect(r2.status).toBe(2);
    expect(r2.stderr).toMatch(/not a GGUF file/);
  });
});

describe('q36 --dump-tokens and --render', () => {
  const model = fixture('tinyA/tinyA-q2.gguf');
  const ref = JSON.parse(fs.readFileSync(fixture('tinyA/reference.json'), 'utf8'));
  it('--dump-tokens --json prints the HF ids for a reference text', () => {
    const c = ref.tokenizer_cases[2];
    const r = q36('-m', model, '--dump-tokens', '--json', '-p', c.text);
    expect(r.status).toBe(0);
    const out = JSON.parse(r.stdout);
    expect(out.ids).toEqual(c.ids);
    expect(out.pieces.join('')).toBe(c.decoded);
  });
  it('--dump-tokens reads --prompt-file and prints one line per token', () => {
    const dir = require('node:fs').mkdtempSync('/tmp/q36-cli-');
    const p = path.join(dir, 'p.txt');
    require('node:fs').writeFileSync(p, 'Hello world');
    const r = q36('-m', model, '--dump-tokens', '--prompt-file', p);
    expect(r.status).toBe(0);
    expect(r.stdout).toMatch(/^\s+39\s+"H"$/m);
    expect(r.stdout).toMatch(/7 tokens/);
  });
  it('--render prints exactly the template output; bad input exits 2 with a message', () => {
    const dir = require('node:fs').mkdtempSync('/tmp/q36-cli-');
    const m = path.join(dir, 'm.json');
    require('node:fs').writeFileSync(m, JSON.stringify([{ role: 'system', content: 'You are helpful.' }, { role: 'user', content: 'Hi' }]));
    const r = q36('--render', '--messages-file', m);
    expect(r.stdout).toBe('<|im_start|>system\nYou are helpful.<|im_end|>\n<|im_start|>user\nHi<|im_end|>\n<|im_start|>assistant\n<think>\n');
    const r2 = q36('--render', '--messages-file', m, '--nothink');
    expect(r2.stdout.endsWith('<think>\n\n</think>\n\n')).toBe(true);
    require('node:fs').writeFileSync(m, '[]');
    const r3 = q36('--render', '--messages-file', m);
    expect(r3.status).toBe(2);
    expect(r3.stderr).toMatch(/chat template: No messages provided/);
    require('node:fs').writeFileSync(m, '{not json');
    expect(q36('--render', '--messages-file', m).stderr).toMatch(/is not valid JSON/);
  });
});

describe('--version on every command (#48 item 3)', () => {
  const version = JSON.parse(fs.readFileSync(path.join(ROOT, 'package.json'), 'utf8')).version as string;
  it.each(['q36', 'q36-server', 'q36-agent', 'q36-bench', 'q36-eval', 'q36-quantize', 'q36-imatrix'])('%s --version: one line, exit 0, also among other flags', (tool) => {
    for (const args of [['--version'], ['-m', fixture('tinyA/tinyA-q2.gguf'), '--version']]) {
      const r = spawnSync(process.execPath, [path.join(ROOT, `dist/ts/cli/${tool}.js`), ...args], { encoding: 'utf8', timeout: 30_000 });
      expect(r.stdout, r.stderr).toBe(`${tool} ${version} (QuarkStar)\n`);
      expect(r.status).toBe(0);
    }
  });
  it('q36-bench names the flags it was given when the walk exceeds the model\'s context', () => {
    const r = spawnSync(process.execPath, [path.join(ROOT, 'dist/ts/cli/q36-bench.js'), '--cpu', '-m', fixture('tinyA/tinyA-q2.gguf'), '--ctx-max', '32768'], { encoding: 'utf8', timeout: 30_000 });
    expect(r.stderr).toMatch(/--ctx-max 32768 \+ --gen-tokens 128 \(\+1\) = 32897 tokens exceed the model's context length 4096: lower --ctx-max or --gen-tokens/);
    expect(r.status).not.toBe(0);
  });
});

describe('--help on every command (#48 item 3)', () => {
  it.each(['q36', 'q36-server', 'q36-agent', 'q36-bench', 'q36-eval', 'q36-quantize', 'q36-imatrix'])('%s --help: plain text, at most 100 columns (a single longer word aside), exit 0', (tool) => {
    const r = spawnSync(process.execPath, [path.join(ROOT, `dist/ts/cli/${tool}.js`), '--help'], { encoding: 'utf8', timeout: 30_000 });
    expect(r.status).toBe(0);
    expect(r.stdout).toMatch(new RegExp(`usage: ${tool}`));
    expect(r.stdout).not.toMatch(/\x1b\[/);
    for (const line of r.stdout.split('\n')) if (line.length > 100) expect(line.trim(), line).not.toMatch(/\s/);
    if (tool === 'q36') expect(r.stdout).toMatch(/^ {2}-n VALUE +tokens to generate \(default: 2048\)$/m);
  });
});
