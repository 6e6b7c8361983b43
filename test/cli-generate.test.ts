import { spawnSync } from 'node:child_process';
import * as fs from 'node:fs';
import * as path from 'node:path';
import { describe, expect, it } from 'vitest';
import { fixture, tmpDir } from './helpers.js';

const ROOT = path.resolve(__dirname, '..');
const q36 = (...args: string[]) => spawnSync(process.execPath, [path.join(ROOT, 'dist/ts/cli/q36.js'), ...args], { encoding: 'utf8' });

describe('q36 test-vector interface (--prompt-ids, --dump-logits, --dump-logprobs)', () => {
  const ref = JSON.parse(fs.readFileSync(fixture('tinyR/reference.json'), 'utf8'));
  const refLogits = new Float32Array(fs.readFileSync(fixture('tinyR/reference-logits.f32')).buffer.slice(0));
  it('writes len(prompt) + N logits rows matching the oracle layout, and the greedy ids', () => {
    const dir = tmpDir();
    const c = ref.cases[2];
    const idsFile = path.join(dir, 'ids.txt');
    fs.writeFileSync(idsFile, c.prompt_ids.join(' '));
    const out = path.join(dir, 'out.f32'), lp = path.join(dir, 'lp.json');
    const r = q36('--cpu', '-m', fixture('tinyR/tinyR-bf16.gguf'), '--prompt-ids', `@${idsFile}`, '-n', String(c.greedy_ids.length), '--temp', '0',
      '--dump-logits', out, '--dump-logprobs', lp, '--logprobs-top-k', '5');
    expect(r.status, r.stderr).toBe(0);
    expect(r.stdout.trim()).toBe(`generated: ${c.greedy_ids.join(' ')}`);
    const got = new Float32Array(fs.readFileSync(out).buffer.slice(0));
    const rows = c.prompt_ids.length + c.greedy_ids.length;
    expect(got.length).toBe(rows * c.vocab);
    const errs: number[] = [];
    for (let p = 0; p < rows; p++) {
      let m = 0;
      for (let v = 0; v < c.vocab; v++) m = Math.max(m, Math.abs(got[p * c.vocab + v] - refLogits[c.logits_offset_bytes / 4 + p * c.vocab + v]));
      errs.push(m);
    }
    errs.sort((a, b) => a - b);
    console.log(`CLI --dump-logits (f16 KV) vs HF: max ${errs[rows - 1].toExponential(2)}, p99 ${errs[Math.floor(0.99 * (rows - 1))].toExponential(2)}`);
    expect(errs[Math.floor(0.99 * (rows - 1))]).toBeLessThanOrEqual(2e-3);
    const j = JSON.parse(fs.readFileSync(lp, 'utf8'));
    expect(j.steps.map((s: { token: number }) => s.token)).toEqual(c.greedy_ids);
    expect(j.steps[0].top).toHaveLength(5);
    expect(j.steps[0].top[0].id).toBe(c.greedy_ids[0]);
    expect(j.steps[0].logprob).toBeCloseTo(j.steps[0].top[0].logprob, 6);
  });

  it('one-shot -p runs the chat template and generates; bad flags exit 2 with one line', () => {
    const r = q36('--cpu', '-m', fixture('tinyA/tinyA-q2.gguf'), '-p', 'Hello', '-n', '5', '--seed', '1');
    expect(r.status, r.stderr).toBe(0);
    expect(r.stderr).toMatch(/generated \d+ tokens/);
    for (const [args, msg] of [
      [['--temp', 'hot'], /--temp expects a number/],
      [['-ctk', 'q3'], /-ctk\/--cache-type-k must be one of/],
      [['--ctx', '999999'], /exceeds the model's context length/],
      [['-n', '-3'], /-n must be ≥ 0/],
      [['--top-p', '2'], /--top-p must be ≤ 1/],
      [['--vulkan'], /give --cpu or --vulkan, not both/],
      [['--prompt-ids', '1,x'], /"x" is not a token id/],
      [['--dir-steering-ffn', '1'], /need --dir-steering-file/],
      [['--tmep', '0'], /unknown flag --tmep/],
      [['--vk-weights', 'mmap'], /--vk-weights must be auto, import or upload/],
    ] as [string[], RegExp][]) {
      const e = q36('--cpu', '-m', fixture('tinyA/tinyA-q2.gguf'), '-p', 'x', ...args);
      expect(e.status, args.join(' ')).toBe(2);
      expect(e.stderr.trim().split('\n').pop()).toMatch(msg);
    }
    const v = q36('--vulkan', '-m', fixture('tinyA/tinyA-q2.gguf'), '-p', 'x', '-n', '3', '--vk-device', '0', '--vk-weights', 'upload');
    expect(v.status, v.stderr).toBe(0);
    expect(v.stderr).toMatch(/backend +vulkan/);
    expect(v.stderr).toMatch(/weights +[\d.]+ MiB copied to the device\n/);
    const bad = q36('--vulkan', '-m', fixture('tinyA/tinyA-q2.gguf'), '-p', 'x', '--vk-device', '7');
    expect(bad.status).toBe(2);
    expect(bad.stderr).toMatch(/Vulkan device 7 does not exist/);
  });

  it('steering with a zero scale changes nothing; a direction changes the logits', () => {
    const dir = tmpDir();
    const steer = path.join(dir, 'steer.f32');
    const d = new Float32Array(4 * 256);
    for (let l = 0; l < 4; l++) d[l * 256 + l] = 1; // unit directions
    fs.writeFileSync(steer, Buffer.from(d.buffer));
    const base = ['--cpu', '-m', fixture('tinyA/tinyA-q8_0.gguf'), '--prompt-ids', '1,2,3,4', '-n', '0', '--temp', '0'];
    const a = path.join(dir, 'a.f32'), b = path.join(dir, 'b.f32'), c = path.join(dir, 'c.f32');
    expect(q36(...base, '--dump-logits', a).status).toBe(0);
    expect(q36(...base, '--dump-logits', b, '--dir-steering-file', steer, '--dir-steering-ffn', '0').status).toBe(0);
    expect(q36(...base, '--dump-logits', c, '--dir-steering-file', steer).status).toBe(0);
    expect(fs.readFileSync(a).equals(fs.readFileSync(b))).toBe(true);
    expect(fs.readFileSync(a).equals(fs.readFileSync(c))).toBe(false);
    const bad = path.join(dir, 'bad.f32');
    fs.writeFileSync(bad, Buffer.alloc(12));
    const r = q36(...base, '--dir-steering-file', bad);
    expect(r.status).toBe(2);
    expect(r.stderr).toMatch(/steering directions hold 3 floats, expected 4 × 256/);
  });
});

describe('q36 on a terminal and in a pipe (#48 item 2)', () => {
  it('a terminal sees what loads and how long it took; a pipe sees none of it', async () => {
    const { driveQ36 } = await import('./helpers.js');
    const m = fixture('tinyA/tinyA-q2.gguf');
    const tty = driveQ36([{ expect: 'loading .*tinyA-q2\\.gguf \\(\\d+\\.\\d MiB\\) on the CPU… \\d+\\.\\d s', timeout: 60 }, { expect: 'generated 1 tokens', timeout: 60 }], ['--cpu', '-m', m, '-p', 'hi', '-n', '1'], 120_000);
    expect(tty.ok, tty.transcript.slice(-800)).toBe(true);
    const pipe = q36('--cpu', '-m', m, '-p', 'hi', '-n', '1');
    expect(pipe.status).toBe(0);
    expect(pipe.stderr).not.toMatch(/loading/);
  }, 200_000);
});

describe('the backend chosen without --cpu/--vulkan (#48 item 2)', () => {
  it('says in one line why it is the CPU engine when the only Vulkan device is a CPU device', () => {
    const r = q36('-m', fixture('tinyA/tinyA-q2.gguf'), '-p', 'hi', '-n', '1');
    expect(r.status).toBe(0);
    const gpu = /backend +vulkan/.test(r.stderr);
    // lavapipe in CI: the CPU engine, and why; on a machine with a GPU: Vulkan, no note
    if (!gpu) expect(r.stderr).toMatch(/^using the CPU engine: the only Vulkan device is llvmpipe.*, a CPU device \(--vulkan uses it anyway\)$/m);
    else expect(r.stderr).not.toMatch(/using the CPU engine/);
    expect(q36('--cpu', '-m', fixture('tinyA/tinyA-q2.gguf'), '-p', 'hi', '-n', '1').stderr).not.toMatch(/using the CPU engine/);
  });
});
