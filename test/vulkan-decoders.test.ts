/**
 * The Vulkan weight decoders (shaders/decode.glsl) against the oracle's dequantized values, bit for
 * bit: a product with one-hot activations reads each decoded weight back unchanged (the other
 * terms are exact zeros), through each kernel that decodes — the tiled mm, the 8-row matmul and
 * the one-row matvec (decode) — so a wrong bit, nibble, sign or table entry fails by value.
 */
import * as fs from 'node:fs';
import { afterAll, describe, expect, it } from 'vitest';
import { ALL_TYPES } from '../ts/gguf/index.js';
import { Core } from '../ts/core/wasm.js';
import { OpList, Pipelines, gridBlob, matvecOp } from '../ts/engine/vulkan/graph.js';
import { MATVEC } from '../ts/engine/vulkan/weights.js';
import { loadAddon } from '../ts/vk/addon.js';
import { fixture } from './helpers.js';

/** quant/<type>.bin: "QORC", type id, elems/block, bytes/block, n_blocks; raw blocks; f32 values. */
function oracle(name: string) {
  const b = fs.readFileSync(fixture('quant', `${name}.bin`));
  const elems = b.readUInt32LE(8), bytes = b.readUInt32LE(12), nBlocks = b.readUInt32LE(16);
  const raw = new Uint8Array(b.buffer, b.byteOffset + 20, bytes * nBlocks).slice();
  const at = 20 + bytes * nBlocks;
  return { raw, vals: new Uint32Array(b.buffer.slice(b.byteOffset + at, b.byteOffset + at + 4 * elems * nBlocks)), n: elems * nBlocks };
}

// the scalar types' oracle values span the whole finite range (and f32 subnormals): the decoders
// to test are the block formats'
const TYPES = ALL_TYPES.filter((t) => t.supported && t.blockElems > 1);
const N = 256;

describe('Vulkan decoders reproduce the oracle values exactly', () => {
  const dev = new (loadAddon().Device)(-1);
  const pipes = new Pipelines(dev);
  const g = gridBlob(new Core());
  const grid = dev.createBuffer(g.byteLength, false);
  dev.write(grid, 0, g);
  // identity activations: row j is the one-hot vector e_j
  const eye = new Float32Array(N * N);
  for (let j = 0; j < N; j++) eye[j * N + j] = 1;
  const X = dev.createBuffer(eye.byteLength, false);
  dev.write(X, 0, new Uint8Array(eye.buffer));
  const ids = dev.createBuffer(16, false);
  afterAll(() => dev.dispose());

  it('covers every block type the CPU decodes', () => expect(TYPES.map((t) => MATVEC[t.id])).toEqual(TYPES.map((t) => t.name.toLowerCase())));

  // kernel: which shader matvecOp picks — mm (≥ 64 weight rows, ≥ 16 activation rows), matmul
  // (fewer weight rows), matvec (one activation row per dispatch, every third column)
  for (const t of TYPES) {
    for (const kernel of ['mm', 'matmul', 'matvec'] as const) {
      it(`${t.name} through ${kernel}`, () => {
        const o = oracle(t.name.toLowerCase());
        const rows = o.n / N, rb = o.raw.byteLength / rows;
        const W = dev.createBuffer(o.raw.byteLength, false), Y = dev.createBuffer(rows * N * 4, true);
        dev.write(W, 0, o.raw);
        const ops = new OpList(pipes);
        const base = { type: MATVEC[t.id], buffers: [W, X, Y, ids, grid] as [number, number, number, number, number], rows, n: N, rowBytes: rb };
        const cols = kernel === 'matvec' ? Array.from({ length: Math.ceil(N / 3) }, (_, i) => 3 * i) : [];
        if (kernel === 'matvec') for (const j of cols) matvecOp(ops, { ...base, nRows: 1, xOffset: j * N, yOffset: j * rows, barrier: false });
        else matvecOp(ops, { ...base, nRows: N, weightRows: kernel === 'mm' ? Math.max(rows, 64) : 1 });
        const used = ops.names[0].split(' ')[0];
        if (kernel === 'mm') expect(used).toBe(`mm_${MATVEC[t.id]}`);
        if (kernel === 'matmul') expect(used).toBe(`matmul_${MATVEC[t.id]}`);
        const cmd = dev.record(ops.build());
        dev.runSync(cmd);
        // Y[j·rows + r] = W_r · e_j = element j of row r
        const y = new Uint32Array(dev.read(Y, 0, rows * N * 4));
        let bad = 0, first = '';
        for (const j of kernel === 'matvec' ? cols : Array.from({ length: N }, (_, i) => i)) {
          for (let r = 0; r < rows; r++) {
            const want = o.vals[r * N + j], got = y[j * rows + r];
            // +0 and −0 are the same weight (a zero times a sign)
            if (got !== want && !(((got | want) >>> 0) === 0x80000000 && (got & want) === 0)) {
              bad++;
              if (!first) first = `row ${r} element ${j}: got 0x${got.toString(16)}, oracle 0x${want.toString(16)}`;
            }
          }
        }
        expect(bad, `${t.name}/${kernel}: ${bad} values differ (${first})`).toBe(0);
        dev.freeCommand(cmd);
        dev.freeBuffer(W); dev.freeBuffer(Y);
      });
    }
  }
});
