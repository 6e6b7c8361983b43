/**
 * The Vulkan weight decoders against the oracle's dequantized values, bit for bit: a product with
 * one-hot activations reads each decoded weight back unchanged (the other terms are exact zeros),
 * through each kernel that decodes — the tiled mm, the 8-row matmul, the one-row matvec and mv —
 * and, on a device with matrix units, through mmc, whose tiles hold each value as two f16 (the
 * f32 cut to f16's 11 significant bits, and the rest times 2^11 rounded to f16): there each value
 * must be splitRound of the oracle's (written from that definition and IEEE 754, not from the shader).
 * Used by test/vulkan-decoders.test.ts (lavapipe) and scripts/check/vk-decoders.ts (a GPU).
 */
import * as path from 'node:path';
import { ALL_TYPES, type TypeInfo } from '../../ts/gguf/index.js';
import { Core } from '../../ts/core/wasm.js';
import { OpList, Pipelines, gridBlob, matvecOp } from '../../ts/engine/vulkan/graph.js';
import { MATVEC } from '../../ts/engine/vulkan/weights.js';
import type { VkDevice } from '../../ts/vk/addon.js';
import { readQuantOracle } from './quant-oracle.js';

export const KERNEL_PATHS = ['mm', 'matmul', 'matvec', 'mv'] as const;
/** the tiled matmul on the matrix units (a device with VkDevice.info().coopmat) */
export const COOPMAT_PATH = 'mmc' as const;
export type KernelPath = (typeof KERNEL_PATHS)[number] | typeof COOPMAT_PATH;

/** The f32 whose bits are `bits` rounded to the nearest f16 (ties to even; overflow to ±∞; subnormal f16 kept), as f32 bits. */
export function f16Round(bits: number): number {
  const f = new Float32Array(1), u = new Uint32Array(f.buffer);
  u[0] = bits >>> 0;
  const x = f[0];
  if (!Number.isFinite(x) || x === 0) return bits >>> 0;
  const a = Math.abs(x);
  if (a >= 65520) { f[0] = x > 0 ? Infinity : -Infinity; return u[0]; }
  // the f16 spacing at a: 2^(e − 10) for normal f16, 2^−24 below 2^−14
  const e = Math.max(Math.floor(Math.log2(a)), -14);
  let q = 2 ** (e - 10);
  // log2 can be off by one near powers of two
  if (a >= 2 ** (e + 1)) q *= 2;
  const n = a / q, lo = Math.floor(n), frac = n - lo;
  const m = frac > 0.5 || (frac === 0.5 && lo % 2 === 1) ? lo + 1 : lo;
  f[0] = Math.sign(x) * m * q;
  return u[0];
}

/**
 * mmc's two-f16 form of the f32 with bits `bits`, summed back in f32: f16(hi) + f16(lo · 2^11) / 2^11,
 * hi the f32 cut to 11 significant bits (f16(hi) = hi across f16's normal range; below 2^-14 the
 * subnormal f16 rounds it), lo = x − hi.
 */
export function splitRound(bits: number): number {
  const f = new Float32Array(4), u = new Uint32Array(f.buffer);
  u[0] = bits >>> 0;
  u[1] = (bits & 0xffffe000) >>> 0;
  f[2] = (f[0] - f[1]) * 2048;
  u[2] = f16Round(u[2]);
  u[3] = f16Round(u[1]);
  f[0] = f[3] + f[2] / 2048;
  return u[0];
}

/** The block types (the scalar types' oracle values span the whole finite range, subnormals too). */
export const BLOCK_TYPES: TypeInfo[] = ALL_TYPES.filter((t) => t.supported && t.blockElems > 1);

const N = 256;

export interface DecoderCheck { type: string; kernel: KernelPath; shader: string; checked: number; bad: number; first?: string }

export class DecoderChecker {
  private pipes: Pipelines;
  private grid: number;
  private X: number;
  private ids: number;

  constructor(private readonly dev: VkDevice, private readonly quantDir: string) {
    this.pipes = new Pipelines(dev);
    const g = gridBlob(new Core());
    this.grid = dev.createBuffer(g.byteLength, false);
    dev.write(this.grid, 0, g);
    // identity activations: row j is the one-hot vector e_j
    const eye = new Float32Array(N * N);
    for (let j = 0; j < N; j++) eye[j * N + j] = 1;
    this.X = dev.createBuffer(eye.byteLength, false);
    dev.write(this.X, 0, new Uint8Array(eye.buffer));
    this.ids = dev.createBuffer(16, false);
  }

  /** mm: ≥ 64 weight rows, ≥ 16 activation rows; matmul: fewer weight rows; matvec, mv: one activation row per dispatch, every third column. */
  check(t: TypeInfo, kernel: KernelPath): DecoderCheck {
    const dev = this.dev, o = readQuantOracle(path.join(this.quantDir, `${t.name.toLowerCase()}.bin`));
    const rows = (o.nBlocks * o.elems) / N, rb = o.raw.byteLength / rows;
    const W = dev.createBuffer(o.raw.byteLength, false), Y = dev.createBuffer(rows * N * 4, true);
    dev.write(W, 0, o.raw);
    const ops = new OpList(this.pipes);
    const base = { type: MATVEC[t.id], buffers: [W, this.X, Y, this.ids, this.grid] as [number, number, number, number, number], rows, n: N, rowBytes: rb };
    const one = kernel === 'matvec' || kernel === 'mv';
    const cols = one ? Array.from({ length: Math.ceil(N / 3) }, (_, i) => 3 * i) : Array.from({ length: N }, (_, i) => i);
    if (one) for (const j of cols) matvecOp(ops, { ...base, nRows: 1, xOffset: j * N, yOffset: j * rows, barrier: false, unit: kernel === 'mv' });
    else matvecOp(ops, { ...base, nRows: N, weightRows: kernel === 'mm' || kernel === 'mmc' ? Math.max(rows, 64) : 1, coopmat: kernel === 'mmc' });
    const cmd = dev.record(ops.build());
    dev.runSync(cmd);
    // Y[j·rows + r] = W_r · e_j = element j of row r
    const y = new Uint32Array(dev.read(Y, 0, rows * N * 4));
    const r: DecoderCheck = { type: t.name, kernel, shader: ops.names[0].split(' ')[0], checked: 0, bad: 0 };
    for (const j of cols) {
      for (let row = 0; row < rows; row++) {
        const want = kernel === 'mmc' ? splitRound(o.vals[row * N + j]) : o.vals[row * N + j], got = y[j * rows + row];
        r.checked++;
        // +0 and −0 are the same weight (a zero times a sign)
        if (got !== want && !(((got | want) >>> 0) === 0x80000000 && (got & want) === 0)) {
          r.bad++;
          r.first ??= `row ${row} element ${j}: got 0x${got.toString(16)}, oracle 0x${want.toString(16)}`;
        }
      }
    }
    dev.freeCommand(cmd);
    dev.freeBuffer(W); dev.freeBuffer(Y);
    return r;
  }
}
