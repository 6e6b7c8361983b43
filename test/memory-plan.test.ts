/**
 * The README's BC-250 presets planned against a simulated board: the full-size q2 and q2-q4 models'
 * tensor tables (header-only files: the data a hole), each preset's options built as its CLI builds
 * them, and the memory plan (ts/engine/vulkan/memory-plan.ts) for a 16 GB unified device as RADV
 * reports the BC-250 (wave64, no matrix cores, zero-copy import, TTM-bounded GTT as device-local).
 * Each preset fits, with its total and startup line; what cannot fit is refused with the numbers and
 * the flag to change. The imported weights count: on unified memory they are the same memory.
 */
import * as fs from 'node:fs';
import * as path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { draftSpec, engineOptions } from '../ts/cli/options.js';
import { parseSize } from '../ts/cli/size.js';
import { AGENT_CTX, MAX_BATCH_ROWS } from '../ts/engine/defaults.js';
import { openModel } from '../ts/engine/open-model.js';
import type { EngineOptions } from '../ts/engine/types.js';
import { describePlan, planMemory, type DeviceInfo } from '../ts/engine/vulkan/memory-plan.js';
import { PRESETS, makeModel } from '../ts/model/synthetic-model.js';
import { SCRATCH_NAMES, scratchTable } from '../ts/engine/vulkan/scratch.js';
import type { ModelShape } from '../ts/model/shape.js';
import { tmpDir } from './helpers.js';

const GiB = 2 ** 30;
/** A BC-250 as the engine would see it under a 16 GB plan (--vk-memory-limit 16GB): what the presets must fit. */
const BOARD: DeviceInfo = {
  name: 'AMD BC-250 (RADV GFX1013, simulated)', type: 'integrated', driver: 'radv Mesa 25.0.7', subgroupSize: 64, subgroupOps: true,
  subgroupFeatures: 255, maxComputeSharedMemorySize: 65536, maxStorageBufferRange: 2 ** 32 - 1, unifiedMemory: true,
  minStorageBufferOffsetAlignment: 4, externalMemoryHost: true, importAlignment: 4096, integerDot: true, integerDotAccelerated: false,
  coopmat: false, coopmatShapes: '', bufferArrays: true, maxStageStorageBuffers: 1 << 20,
  deviceLocalBytes: parseSize('--vk-memory-limit', '16GB')!, memoryBudgetBytes: 0,
};

let dir: string;
const model = (recipe: 'q2' | 'q2q4') => path.join(dir, `full-${recipe}.gguf`);
beforeAll(() => {
  dir = tmpDir();
  for (const recipe of ['q2', 'q2q4'] as const) makeModel({ out: model(recipe), geometry: PRESETS.full, recipe, headerOnly: true });
});
afterAll(() => fs.rmSync(dir, { recursive: true, force: true }));

/** The options a CLI builds from its flags (q36's engineOptions; the agent's and server's presets on top). */
function cliOptions(m: string, flags: Record<string, unknown>, preset?: { agent?: boolean; slots?: number }): EngineOptions {
  const a = { vulkan: true, ...flags };
  if (preset?.agent && a.ctx === undefined) a.ctx = String(a['ssd-streaming'] ? AGENT_CTX.streaming : AGENT_CTX.resident);
  // as q36 and q36-agent parse them: the drafting flags, then the engine options
  const eo = engineOptions(m, a, 262144, draftSpec(a, ['ngram'], { mtp: true }));
  if (preset?.slots) { eo.sessions = preset.slots; eo.batchRows = Math.min(preset.slots, MAX_BATCH_ROWS); }
  return eo;
}

function plan(eo: EngineOptions) {
  const { file, shape } = openModel(eo);
  const p = planMemory(file, shape, eo, BOARD);
  const line = describePlan(p, BOARD, eo.sessions ?? 1);
  const total = p.weightBytes + p.importedBytes + p.sessionsBytes + p.scratchBytes + p.cacheBytes;
  console.log(`${path.basename(eo.model)} ctx ${eo.ctx} ${eo.kvTypes!.k}/${eo.kvTypes!.v}${eo.streamExperts ? ' streaming' : ''}${(eo.sessions ?? 1) > 1 ? ` × ${eo.sessions}` : ''}: ${line}`);
  return { p, line, total };
}

describe('the README\'s BC-250 presets plan within a 16 GB unified board', () => {
  it('q36: q2 resident at 32K with q8_0/q4_0 KV (the weights mapped from the file, counted)', () => {
    const { p, line, total } = plan(cliOptions(model('q2'), { ctx: '32768' }));
    expect(p.kv).toEqual({ k: 'q8_0', v: 'q4_0' });
    expect(p.mode).toBe('import');
    expect(p.importedBytes).toBeGreaterThan(9 * GiB);
    expect(p.chunk).toBe(512);
    expect(total).toBeLessThanOrEqual(p.capacityBytes);
    expect(line).toMatch(/^memory {4}plan \d+\.\d\d GiB of 14\.16 GiB \(95% of 14\.90 GiB\): weights \d+\.\d\d GiB copied \+ \d+\.\d\d GiB mapped from the file \(unified memory: counted\), KV\/state \d\.\d\d GiB, scratch \d\.\d\d GiB$/);
  });

  it('q36 --ssd-streaming: q2-q4 with F16 KV, the expert cache in what is left', () => {
    const { p, line, total } = plan(cliOptions(model('q2q4'), { 'ssd-streaming': true }));
    expect(p.kv).toEqual({ k: 'f16', v: 'f16' });
    expect(p.stream!.slots.reduce((a, b) => a + b, 0)).toBeGreaterThan(0);
    expect(total).toBeLessThanOrEqual(p.capacityBytes);
    expect(line).toMatch(/expert cache \d+\.\d\d GiB$/);
  });

  it('q36-agent: 32K resident (q8_0/q4_0), and 100K with --ssd-streaming (F16 KV)', () => {
    const r = plan(cliOptions(model('q2'), {}, { agent: true }));
    expect([r.p.kv, r.total <= r.p.capacityBytes]).toEqual([{ k: 'q8_0', v: 'q4_0' }, true]);
    const s = plan(cliOptions(model('q2'), { 'ssd-streaming': true }, { agent: true }));
    expect(s.p.kv).toEqual({ k: 'f16', v: 'f16' });
    expect(s.total).toBeLessThanOrEqual(s.p.capacityBytes);
    expect(s.line).toMatch(/KV\/state \d\.\d\d GiB, scratch/);
  });

  it('q36-server --ctx 32768 --batched-session 4: four sessions\' KV and state counted', () => {
    const { p, line, total } = plan(cliOptions(model('q2'), { ctx: '32768' }, { slots: 4 }));
    expect(p.batchRows).toBe(4);
    expect(p.sessionsBytes).toBe(4 * p.sessionBytes);
    expect(total).toBeLessThanOrEqual(p.capacityBytes);
    expect(line).toMatch(/KV\/state \d\.\d\d GiB \(4 sessions\)/);
  });

  it('q36-agent --draft ngram --draft-max 7: the draft rows and their state checkpoints counted, still on the board', () => {
    const base = plan(cliOptions(model('q2'), {}, { agent: true }));
    const r = plan(cliOptions(model('q2'), { draft: 'ngram', 'draft-max': '7' }, { agent: true }));
    expect(r.p.draftRows).toBe(8);
    // 7 checkpoints of 30 DeltaNet layers' state (2 MiB each) and conv histories
    expect(r.p.scratchBytes - base.p.scratchBytes).toBeGreaterThan(7 * 30 * 2 * 2 ** 20);
    expect(r.total).toBeLessThanOrEqual(r.p.capacityBytes);
    // SSD streaming: no draft steps, and why
    const st = plan(cliOptions(model('q2'), { 'ssd-streaming': true, draft: 'ngram' }, { agent: true }));
    expect([st.p.draftRows, st.p.draftIssue]).toEqual([1, 'SSD streaming loads the experts of one token per step']);
  });

  it('what cannot fit says so with the numbers and the flag to change', () => {
    // the model's whole context with F16 KV, resident
    expect(() => plan(cliOptions(model('q2'), { ctx: '262144', 'cache-type-k': 'f16', 'cache-type-v': 'f16' }))).toThrow(/model does not fit AMD BC-250 .*: weights \d+\.\d\d GiB \(\d+\.\d\d GiB of them mapped from the file\) \+ KV\/state \d+\.\d\d GiB \(ctx 262144\) .* > 14\.90 GiB device memory: lower --ctx, use -ctk q8_0 -ctv q4_0.*or stream the routed experts from the file \(--ssd-streaming\)/);
    // too many resident sessions at 128K each
    expect(() => plan(cliOptions(model('q2'), { ctx: '131072' }, { slots: 8 }))).toThrow(/KV\/state \d+\.\d\d GiB \(ctx 131072 × 8 sessions\).*lower --ctx or --batched-session/);
  });
});

describe('the scratch table and its names', () => {
  it('the table allocates exactly SCRATCH_NAMES (with steering), each once: a name the engine uses always exists', () => {
    const t = scratchTable(PRESETS.full as unknown as ModelShape, { T: 512, ctx: 4096, logitsRows: 1, steering: true, unified: false, batch: 4, paramWords: 8 });
    const names = t.map((b) => b.name);
    expect(new Set(names).size).toBe(names.length);
    expect([...names].sort()).toEqual([...SCRATCH_NAMES].sort());
    // without steering only its M buffer is left out
    const plain = scratchTable(PRESETS.full as unknown as ModelShape, { T: 512, ctx: 4096, logitsRows: 1, steering: false, unified: false });
    expect(SCRATCH_NAMES.filter((n) => !plain.some((b) => b.name === n))).toEqual(['M']);
  });
  it('prefill attention on the matrix units holds its decoded operands: a pair\'s Q as two f16 (64 rows of padding), K as f16 with an f32 scale per 32 values, V as two f16, for the whole context', () => {
    const s = PRESETS.full as unknown as ModelShape, ctx = 32768, kvDim = s.nHeadKv * s.headDim;
    const bytes = (matrixAttn: boolean) => Object.fromEntries(scratchTable(s, { T: 2048, ctx, logitsRows: 1, steering: false, unified: false, matrixAttn }).filter((b) => ['QD', 'KD', 'VD'].includes(b.name)).map((b) => [b.name, 4 * b.floats]));
    // 2048-token steps attend on the matrix units in pairs of 512 tokens (VK_TUNING.attnTokensUnits)
    expect(bytes(true)).toEqual({ QD: (512 * s.nHead + 64) * s.headDim * 4, KD: ctx * kvDim * 2 + ctx * (kvDim / 32) * 4, VD: ctx * kvDim * 4 });
    expect(bytes(false)).toEqual({ QD: 0, KD: 0, VD: 0 });
    // their partials: a pair's tokens × query heads × 1024-key blocks, against 256 tokens × 256-key blocks on the f32 tiles
    const p = (matrixAttn: boolean) => scratchTable(s, { T: 2048, ctx, logitsRows: 1, steering: false, unified: false, matrixAttn }).find((b) => b.name === 'P')!.floats;
    expect(p(true)).toBe(512 * s.nHead * (ctx / 1024) * s.headDim);
    expect(p(false)).toBe(256 * s.nHead * (ctx / 256) * s.headDim);
  });
});
