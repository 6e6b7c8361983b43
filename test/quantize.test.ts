/**
 * q36-quantize and q36-imatrix against llama.cpp's quantizer (fixtures/quantize: digests of
 * llama-quantize's outputs for tinyA and its imatrix). The quantized files must be byte-identical
 * tensor by tensor; the importance matrix close to llama-imatrix's within the stated tolerance
 * (llama.cpp computes the activations with its own arithmetic: BF16 matmul inputs on its CPU
 * path), and either imatrix must give a file of the same quality.
 */
import { spawnSync } from 'node:child_process';
import * as fs from 'node:fs';
import fsModule from 'node:fs';
import { syncBuiltinESMExports } from 'node:module';
import * as path from 'node:path';
import { afterAll, beforeAll, describe, expect, it, vi } from 'vitest';
import { digestGguf, type FileDigest } from '../scripts/lib/gguf-digest.js';
import { CpuEngine } from '../ts/engine/cpu/cpu-engine.js';
import { GgmlType, kv, rowBytes, writeGguf } from '../ts/gguf/index.js';
import { QuantKernels } from '../ts/core/quant.js';
import { Rng } from '../ts/model/synth.js';
import { quantizeRow } from '../ts/quantize/rows.js';
import { checkQuality } from '../ts/quantize/check.js';
import { collectImatrix } from '../ts/quantize/imatrix-collect.js';
import { readImatrix, writeImatrix, type Imatrix } from '../ts/quantize/imatrix-file.js';
import { quantizeModel } from '../ts/quantize/quantize.js';
import { fixture, tmpDir } from './helpers.js';

const ROOT = path.resolve(__dirname, '..');
const QUANTIZE = path.join(ROOT, 'dist/ts/cli/q36-quantize.js');
const IMATRIX = path.join(ROOT, 'dist/ts/cli/q36-imatrix.js');
const BF16 = fixture('tinyA/tinyA-bf16.gguf');
const ORACLE: Record<string, FileDigest> = JSON.parse(fs.readFileSync(fixture('quantize/oracle-tensors.json'), 'utf8'));
const CORPUS = fixture('quantize/corpus.txt');
// the path string llama-quantize recorded in quantize.imatrix.file
const IMATRIX_AS_RECORDED = 'quantize-inputs-here/tinyA.imatrix';

let dir: string;
beforeAll(() => {
  dir = tmpDir('q36-quantize-');
  fs.mkdirSync(path.join(dir, 'quantize-inputs-here'));
  fs.copyFileSync(fixture('quantize/tinyA.imatrix'), path.join(dir, IMATRIX_AS_RECORDED));
});
afterAll(() => fs.rmSync(dir, { recursive: true, force: true }));

/**
 * Runs the built q36-quantize (as users do; worker threads). In-process runs of the TypeScript
 * sources under vitest are several times slower than the built JavaScript.
 */
function cliQuantize(args: string[]): void {
  const r = spawnSync(process.execPath, [QUANTIZE, ...args, '--threads', '2'], { cwd: dir, encoding: 'utf8', timeout: 120_000 });
  if (r.status !== 0) throw new Error(`q36-quantize ${args.join(' ')} failed (${r.status}): ${r.stderr}`);
}

/** Every tensor (name, type, shape, bytes) and every metadata key (order, type, value) equal. */
function expectSameAsOracle(file: string, oracle: string, o: { ignoreKeys?: string[] } = {}) {
  const got = digestGguf(file), want = ORACLE[oracle];
  expect(got.tensors.length).toBe(want.tensors.length);
  const bad = want.tensors.filter((t, i) => JSON.stringify(got.tensors[i]) !== JSON.stringify(t)).map((t) => t.name);
  expect(bad, `tensors differing from ${oracle}`).toEqual([]);
  const skip = new Set(o.ignoreKeys ?? []);
  expect(got.metadataOrder).toEqual(want.metadataOrder);
  for (const k of want.metadataOrder) if (!skip.has(k)) expect(got.metadata[k], k).toEqual(want.metadata[k]);
  return got;
}

describe('q36-quantize: byte-identical with llama-quantize', () => {
  const im = () => path.join(dir, IMATRIX_AS_RECORDED);
  it('q8_0 recipe from BF16 = the oracle tinyA-q8_0', async () => {
    await quantizeModel({ input: BF16, output: path.join(dir, 'q8_0.gguf'), recipe: 'q8_0' });
    const got = digestGguf(path.join(dir, 'q8_0.gguf')), want = ORACLE['tinyA-q8_0.gguf'];
    // tensors equal; the metadata differs only in what the converter wrote (llama-quantize was not used)
    expect(got.tensors).toEqual(want.tensors);
  });

  it('q2 from BF16, with the imatrix: every tensor and key, and the whole file', async () => {
    const out = path.join(dir, 'q2.gguf');
    cliQuantize([BF16, out, '--recipe', 'q2', '--imatrix', im()]);
    expectSameAsOracle(out, 'tinyA-qz-q2.gguf', { ignoreKeys: ['quantize.imatrix.file'] });
  });

  it('q2q4 from BF16 (layer 3 experts Q4_K: the default --q4-layers on 4 layers)', async () => {
    const out = path.join(dir, 'q2q4.gguf');
    cliQuantize([BF16, out, '--recipe', 'q2q4', '--imatrix', im()]);
    expectSameAsOracle(out, 'tinyA-qz-q2q4.gguf', { ignoreKeys: ['quantize.imatrix.file'] });
  });

  it('q2 from Q8_0 (Q8_0 tensors copied, experts requantized)', async () => {
    const out = path.join(dir, 'q2-from-q8.gguf');
    cliQuantize([path.join(dir, 'q8_0.gguf'), out, '--recipe', 'q2', '--imatrix', im()]);
    expectSameAsOracle(out, 'tinyA-qz-q2-from-q8_0.gguf', { ignoreKeys: ['quantize.imatrix.file'] });
  });

  it('the CLI on worker threads writes the oracle file whole (same imatrix path string)', () => {
    const r = spawnSync(process.execPath, [QUANTIZE, BF16, 'cli-q2.gguf', '--recipe', 'q2', '--imatrix', IMATRIX_AS_RECORDED, '--threads', '2'], { cwd: dir, encoding: 'utf8', timeout: 120_000 });
    expect(r.stderr + r.stdout).toMatch(/on 2 threads/);
    expect(r.status).toBe(0);
    expect(digestGguf(path.join(dir, 'cli-q2.gguf')).sha256).toBe(ORACLE['tinyA-qz-q2.gguf'].sha256);
    expect(fs.readFileSync(fixture('quantize/SHA256SUMS'), 'utf8')).toContain(`${ORACLE['tinyA-qz-q2.gguf'].sha256}  tinyA-qz-q2.gguf`);
    expect(fs.readdirSync(dir).filter((f) => f.startsWith('cli-q2.gguf.') && f.endsWith('.tmp'))).toEqual([]);
  });

  it('--tensor-type overrides and --q4-layers pick the types (first match wins)', async () => {
    const out = path.join(dir, 'ov.gguf');
    cliQuantize([BF16, out, '--recipe', 'q2q4', '--imatrix', im(), '--q4-layers', '0-1',
      '--tensor-type', 'blk\\.0\\.ffn_down_exps=q8_0', '--tensor-type', 'ffn_down=BF16', '--tensor-type', '^output\\.weight$=f16']);
    const types = Object.fromEntries(digestGguf(out).tensors.map((t) => [t.name, t.type]));
    expect(types['blk.0.ffn_down_exps.weight']).toBe('Q8_0');
    expect(types['blk.1.ffn_down_exps.weight']).toBe('BF16');
    expect(types['blk.1.ffn_up_exps.weight']).toBe('Q4_K');
    expect(types['blk.2.ffn_up_exps.weight']).toBe('IQ2_XXS');
    expect(types['blk.0.ffn_down_shexp.weight']).toBe('BF16');
    expect(types['output.weight']).toBe('F16');
    expect(types['blk.0.ffn_gate_inp.weight']).toBe('F32'); // the router is never quantized
  });
});

describe('row quantizers without an importance matrix (no oracle file covers them)', () => {
  // llama.cpp's reference searches (make_qkx2) for Q2_K and Q4_K, and Q8_0: read back by the
  // engine's decoders (bit-exact against the quant oracle), the rows must reconstruct the input
  // within each format's resolution, and the reference search must beat a plain min/max scale
  it.each([[GgmlType.Q8_0, 0.015], [GgmlType.Q4_K, 0.12], [GgmlType.Q2_K, 0.5]] as const)('type %i: relative RMS error ≤ %f', (type, bound) => {
    const q = new QuantKernels();
    const r = new Rng(11);
    const n = 4096;
    const x = Float32Array.from({ length: n }, () => Math.fround(r.normal() * 0.02 + (r.float() < 0.01 ? 0.2 : 0)));
    const out = new Uint8Array(rowBytes(type, n));
    quantizeRow(type, x, out, null);
    const y = q.dequantize(type, out, n);
    let e = 0, d = 0;
    for (let i = 0; i < n; i++) { e += (x[i] - y[i]) ** 2; d += x[i] ** 2; }
    expect(Math.sqrt(e / d)).toBeLessThan(bound);
    expect(Array.from(y).every(Number.isFinite)).toBe(true);
  });
});

describe('q36-quantize: bad inputs fail clearly and leave no output', () => {
  const run = (args: string[]) => spawnSync(process.execPath, [QUANTIZE, ...args], { cwd: dir, encoding: 'utf8', timeout: 60_000 });
  const noOutput = (name: string) => {
    expect(fs.existsSync(path.join(dir, name))).toBe(false);
    expect(fs.readdirSync(dir).filter((f) => f.startsWith(`${name}.`) && f.endsWith('.tmp'))).toEqual([]);
  };

  it('usage errors exit 2 with one line naming the problem', () => {
    const cases: [string[], RegExp][] = [
      [[BF16, 'x.gguf'], /--recipe is required/],
      [[BF16, 'x.gguf', '--recipe', 'q3'], /--recipe must be one of q2, q2q4, q8_0/],
      [[BF16, 'x.gguf', '--recipe', 'q2q4', '--q4-layers', 'last'], /--q4-layers expects A-B/],
      [[BF16, 'x.gguf', '--recipe', 'q2', '--tensor-type', 'attn=q5_k'], /unknown or unsupported type "q5_k"/],
      [[BF16, 'x.gguf', '--recipe', 'q2', '--tensor-type', 'attn'], /PATTERN=TYPE/],
      [['missing.gguf', 'x.gguf', '--recipe', 'q8_0'], /input "missing.gguf" not found/],
      [[BF16, 'x.gguf', '--recipe', 'q2', '--threads', '0'], /--threads must be ≥ 1/],
    ];
    for (const [args, re] of cases) {
      const r = run(args);
      expect(r.status, args.join(' ')).toBe(2);
      expect(r.stderr.trim().split('\n').filter(Boolean)).toHaveLength(1);
      expect(r.stderr).toMatch(re);
    }
    noOutput('x.gguf');
  });

  it('IQ2_XXS without an importance matrix is refused', () => {
    const r = run([BF16, 'x.gguf', '--recipe', 'q2']);
    expect(r.status).toBe(2);
    expect(r.stderr).toMatch(/blk\.0\.ffn_gate_exps\.weight → IQ2_XXS needs an importance matrix: pass --imatrix/);
    noOutput('x.gguf');
  });

  it('a pattern that matches nothing, an imatrix without the tensor, a wrong architecture, an unreadable input type', async () => {
    const partial: Imatrix = readImatrix(path.join(dir, IMATRIX_AS_RECORDED));
    partial.entries.delete('blk.2.ffn_up_exps.weight');
    writeImatrix(path.join(dir, 'partial.imatrix'), partial);
    const shrunk = readImatrix(path.join(dir, IMATRIX_AS_RECORDED));
    const e = shrunk.entries.get('blk.1.ffn_down_exps.weight')!;
    shrunk.entries.set('blk.1.ffn_down_exps.weight', { ne0: e.ne0, sums: e.sums.slice(0, e.ne0 * 2), counts: e.counts.slice(0, 2) });
    writeImatrix(path.join(dir, 'shrunk.imatrix'), shrunk);
    writeGguf(path.join(dir, 'llama.gguf'), {
      metadata: [['general.architecture', kv.str('llama')]],
      tensors: [{ name: 'blk.0.attn_q.weight', shape: [32, 2], type: GgmlType.F32 }],
      fill: () => [new Uint8Array(256)],
    });
    const cases: [string[], RegExp][] = [
      [[BF16, 'x.gguf', '--recipe', 'q8_0', '--tensor-type', 'ffn_moe=q4_k'], /"ffn_moe=Q4_K" matches no quantizable tensor/],
      [[BF16, 'x.gguf', '--recipe', 'q2', '--imatrix', 'partial.imatrix'], /has no entry for blk\.2\.ffn_up_exps\.weight/],
      [[BF16, 'x.gguf', '--recipe', 'q2', '--imatrix', 'shrunk.imatrix'], /entry for blk\.1\.ffn_down_exps\.weight holds 2 × 256 values; the tensor needs 6 × 256/],
      [['llama.gguf', 'x.gguf', '--recipe', 'q8_0'], /architecture "llama" is not qwen35moe/],
      [[fixture('tinyA/tinyA-q2.gguf'), 'x.gguf', '--recipe', 'q2q4', '--imatrix', IMATRIX_AS_RECORDED], /blk\.3\.ffn_down_exps\.weight is Q2_K: q36-quantize reads BF16, F16, F32 or Q8_0/],
      [[BF16, 'x.gguf', '--recipe', 'q2', '--imatrix', CORPUS], /not a GGUF file/],
      [[BF16, 'x.gguf', '--recipe', 'q2', '--q4-layers', '1-2', '--imatrix', IMATRIX_AS_RECORDED], /--q4-layers is only meaningful with --recipe q2q4/],
      [[BF16, 'x.gguf', '--recipe', 'q2q4', '--q4-layers', '2-9', '--imatrix', IMATRIX_AS_RECORDED], /the model has layers 0-3/],
    ];
    for (const [args, re] of cases) {
      const r = run(args);
      expect(r.status, args.join(' ')).not.toBe(0);
      expect(r.stderr.trim().split('\n').filter(Boolean), r.stderr).toHaveLength(1);
      expect(r.stderr).toMatch(re);
    }
    noOutput('x.gguf');
  });

  it('a full disk mid-file: a clear error, no partial file, an existing output untouched', async () => {
    const out = path.join(dir, 'full.gguf');
    fs.writeFileSync(out, 'previous file');
    let written = 0;
    const real = fs.writeSync;
    const spy = vi.spyOn(fsModule, 'writeSync').mockImplementation(((...a: Parameters<typeof fs.writeSync>) => {
      const n = real(...(a as [number, Uint8Array, number, number, number]));
      written += n;
      if (written > 1 << 20) throw Object.assign(new Error('ENOSPC: no space left on device, write'), { code: 'ENOSPC' });
      return n;
    }) as typeof fs.writeSync);
    syncBuiltinESMExports();
    try {
      await expect(quantizeModel({ input: BF16, output: out, recipe: 'q8_0' })).rejects.toThrow(/disk full writing .*full\.gguf/);
    } finally {
      spy.mockRestore();
      syncBuiltinESMExports();
    }
    expect(fs.readFileSync(out, 'utf8')).toBe('previous file');
    expect(fs.readdirSync(path.dirname(out)).filter((f) => f.startsWith(`${path.basename(out)}.`) && f.endsWith('.tmp'))).toEqual([]);
  });
});

describe('q36-imatrix against llama-imatrix', () => {
  let ours: Imatrix;
  const oracle = () => readImatrix(fixture('quantize/tinyA.imatrix'));
  const relL2 = (a: Float32Array, b: Float32Array) => {
    let n = 0, d = 0;
    for (let i = 0; i < a.length; i++) { n += (a[i] - b[i]) ** 2; d += b[i] ** 2; }
    return Math.sqrt(n / d);
  };

  it('the CLI writes the GGUF imatrix format (14 chunks of 128 tokens, 51 entries)', () => {
    const r = spawnSync(process.execPath, [IMATRIX, '-m', BF16, '-f', CORPUS, '-c', '128', '-o', 'ours.imatrix'], { cwd: dir, encoding: 'utf8', timeout: 120_000 });
    expect(r.status, r.stderr).toBe(0);
    expect(r.stdout).toMatch(/51 entries from 14 chunks of 128 tokens/);
    // a pipe gets no progress lines (a terminal gets one, redrawn)
    expect(r.stderr).toBe('');
    ours = readImatrix(path.join(dir, 'ours.imatrix'));
    expect(ours.chunkCount).toBe(14);
    expect(ours.chunkSize).toBe(128);
    expect([...ours.entries.keys()].sort()).toEqual([...oracle().entries.keys()].sort());
    // the same file layout as llama-imatrix's: keys in order, tensor names, shapes and types
    const a = digestGguf(path.join(dir, 'ours.imatrix')), b = digestGguf(fixture('quantize/tinyA.imatrix'));
    expect(a.metadataOrder).toEqual(b.metadataOrder);
    for (const k of ['general.type', 'imatrix.chunk_count', 'imatrix.chunk_size']) expect(a.metadata[k], k).toEqual(b.metadata[k]);
    expect(a.tensors.map(({ name, type, shape }) => ({ name, type, shape }))).toEqual(b.tensors.map(({ name, type, shape }) => ({ name, type, shape })));
  });

  it('matches within tolerance: counts, layer-0 inputs ≤ 1e-5, dense ≤ 5%, experts ≤ 10% (relative L2)', () => {
    const want = oracle();
    for (const [name, w] of want.entries) {
      const g = ours.entries.get(name)!;
      expect(g.ne0, name).toBe(w.ne0);
      expect(g.counts.length, name).toBe(w.counts.length);
      if (w.counts.length === 1) expect(g.counts[0], name).toBe(w.counts[0]); // every token
      else {
        expect(g.counts.reduce((a, b) => a + b, 0), name).toBe(w.counts.reduce((a, b) => a + b, 0)); // top-2 of every token
        for (let j = 0; j < w.counts.length; j++) expect(Math.abs(g.counts[j] - w.counts[j]), `${name} expert ${j}`).toBeLessThanOrEqual(0.01 * 1792);
      }
      const bound = name.startsWith('blk.0.') && /attn_qkv|attn_gate|ssm_alpha|ssm_beta/.test(name) ? 1e-5 : /_exps/.test(name) ? 0.1 : 0.05;
      expect(relL2(g.sums, w.sums), name).toBeLessThanOrEqual(bound);
    }
  });

  it('quantizing with either imatrix gives the same quality (KL against BF16 within 5%)', async () => {
    cliQuantize([BF16, 'q2-ours.gguf', '--recipe', 'q2', '--imatrix', 'ours.imatrix']);
    const src = new CpuEngine({ model: BF16, backend: 'cpu', ctx: 256 });
    const a = new CpuEngine({ model: path.join(dir, 'q2.gguf'), backend: 'cpu', ctx: 256 });
    const b = new CpuEngine({ model: path.join(dir, 'q2-ours.gguf'), backend: 'cpu', ctx: 256 });
    try {
      const toks = src.tokenizer.encode(fs.readFileSync(CORPUS, 'utf8'), { parseSpecial: false });
      const withOracle = await checkQuality({ source: src, quant: a, tokens: toks, ctx: 256, maxWindows: 3 });
      const withOurs = await checkQuality({ source: src, quant: b, tokens: toks, ctx: 256, maxWindows: 3 });
      const q8 = new CpuEngine({ model: path.join(dir, 'q8_0.gguf'), backend: 'cpu', ctx: 256 });
      const withQ8 = await checkQuality({ source: src, quant: q8, tokens: toks, ctx: 256, maxWindows: 3 });
      q8.dispose();
      expect(withOracle.positions).toBe(768);
      expect(Math.abs(withOurs.meanKl - withOracle.meanKl) / withOracle.meanKl).toBeLessThan(0.05);
      // and the check can tell quality apart: Q8_0 is far closer to the source than 2-bit experts
      expect(withQ8.meanKl).toBeLessThan(withOracle.meanKl / 5);
      expect(withQ8.top1).toBeGreaterThan(withOracle.top1);
    } finally {
      src.dispose(); a.dispose(); b.dispose();
    }
  });

  it('q36-quantize --check prints per-window and total KL and top-1 agreement', () => {
    const r = spawnSync(process.execPath, [QUANTIZE, '--check', BF16, 'q8_0.gguf', '-f', CORPUS, '--ctx', '256', '--chunks', '2', '--positions', 'pos.csv'], { cwd: dir, encoding: 'utf8', timeout: 120_000 });
    expect(r.status, r.stderr).toBe(0);
    expect(r.stdout).toMatch(/window 0: mean KL/);
    expect(r.stdout).toMatch(/positions 512 in 2 windows of 256/);
    expect(r.stdout).toMatch(/KL divergence: mean [0-9.e+-]+, median/);
    expect(r.stdout).toMatch(/top-1 agreement: \d+\.\d\d%/);
    const rows = fs.readFileSync(path.join(dir, 'pos.csv'), 'utf8').trim().split('\n');
    expect(rows[0]).toBe('window,position,kl,top1_source,top1_quant');
    expect(rows).toHaveLength(513);
  });

  it('bad q36-imatrix arguments exit 2 naming the problem', () => {
    const run = (args: string[]) => spawnSync(process.execPath, [IMATRIX, ...args], { cwd: dir, encoding: 'utf8', timeout: 60_000 });
    for (const [args, re] of [
      [['-f', CORPUS, '-o', 'x.imatrix'], /-m MODEL is required/],
      [['-m', BF16, '-o', 'x.imatrix'], /-f TEXT/],
      [['-m', BF16, '-f', CORPUS, '-o', 'x.imatrix', '-c', '8'], /-c must be ≥ 16/],
      [['-m', BF16, '-f', CORPUS, '-o', 'x.imatrix', '--vulkan'], /runs on the CPU reference engine/],
    ] as [string[], RegExp][]) {
      const r = run(args);
      expect(r.status, args.join(' ')).toBe(2);
      expect(r.stderr).toMatch(re);
    }
    expect(fs.existsSync(path.join(dir, 'x.imatrix'))).toBe(false);
  });
});
