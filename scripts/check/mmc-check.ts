/**
 * mmc-check: the matrix-unit matmuls (mmc, mmc_moe) against the f32 tiles (mm, mm_moe) on random
 * data, in every form the prefill step uses them: dense plain and GLU, routed experts' gate+up
 * (GLU, X row = token) and down (X row = pair), full and partial tiles. Prints, per form, the
 * largest |Δ| relative to the largest |output|. Needs a device with matrix units (the H200).
 *
 *   node dist/scripts/check/mmc-check.js [--tokens 63,100] [--device N]
 */
import { parseArgs } from 'node:util';
import { Core } from '../../ts/core/wasm.js';
import { MV, OpList, Pipelines, gridBlob, matvecOp, type MatvecDispatch } from '../../ts/engine/vulkan/graph.js';
import { loadAddon } from '../../ts/vk/addon.js';
import { Rng } from '../../ts/model/synth.js';

const { values: a } = parseArgs({ options: { tokens: { type: 'string', default: '63,100' }, device: { type: 'string', default: '-1' } } });
const dev = new (loadAddon().Device)(Number(a.device));
if (!dev.info().coopmat) { console.error(`mmc-check: ${dev.info().name} has no usable matrix units`); process.exit(2); }
const pipes = new Pipelines(dev);
const rng = new Rng(7);
const rand = (n: number, s: number) => Float32Array.from({ length: n }, () => (rng.float() * 2 - 1) * s);
const buf = (x: Float32Array | Uint32Array) => { const b = dev.createBuffer(x.byteLength, true); dev.write(b, 0, new Uint8Array(x.buffer, x.byteOffset, x.byteLength)); return b; };
const g = gridBlob(new Core());
const grid = dev.createBuffer(g.byteLength, false);
dev.write(grid, 0, g);

/** Runs d with mm and with mmc into two fresh outputs; the largest |Δ| / largest |y|. */
function compare(label: string, d: Omit<MatvecDispatch, 'buffers'> & { buffers: [number, number, number, number, number] }, yLen: number): void {
  const ys = [false, true].map((coopmat) => {
    const Y = dev.createBuffer(yLen * 4, true);
    dev.write(Y, 0, new Uint8Array(yLen * 4));
    const ops = new OpList(pipes);
    matvecOp(ops, { ...d, buffers: [d.buffers[0], d.buffers[1], Y, d.buffers[3], d.buffers[4]], coopmat });
    const cmd = dev.record(ops.build());
    dev.runSync(cmd);
    dev.freeCommand(cmd);
    const y = new Float32Array(dev.read(Y, 0, yLen * 4));
    dev.freeBuffer(Y);
    return { y, shader: ops.names[0].split(' ')[0] };
  });
  let m = 0, big = 0, at = -1;
  for (let i = 0; i < yLen; i++) {
    big = Math.max(big, Math.abs(ys[0].y[i]));
    const e = Math.abs(ys[0].y[i] - ys[1].y[i]);
    if (!(e <= m)) { m = e; at = i; }
  }
  console.log(`${label.padEnd(34)} ${ys[0].shader} vs ${ys[1].shader}: max |Δ| ${m.toExponential(2)} of |y| ≤ ${big.toExponential(2)} (${(m / big).toExponential(2)}) at ${at}`);
}

const n = 256, rows = 192;
for (const T of a.tokens!.split(',').map(Number)) {
  const X = buf(rand(T * 2 * n, 1));
  const ids = dev.createBuffer(16, false);
  for (const glu of [false, true]) {
    const W = buf(rand(rows * 2 * n, 0.1));
    compare(`dense ${glu ? 'GLU ' : ''}T=${T}`, { type: 'f32', buffers: [W, X, 0, ids, grid], rows, n, rowBytes: n * 4, nRows: T, flags: glu ? MV.glu : 0, upBytes: glu ? rows * n * 4 : 0 }, T * rows);
  }
  // routed experts: E experts, K of them a token; pairs grouped by expert as moe_tiles groups them
  const E = 6, K = 2, BN = 32;
  const eOf = Array.from({ length: T * K }, (_, p) => (Math.floor(p / K) * 5 + (p % K) * 3 + (p % 7 === 0 ? 1 : 0)) % E);
  const list: number[] = [], tiles: number[] = [];
  for (let e = 0; e < E; e++) {
    const ps = eOf.flatMap((x, p) => (x === e ? [p] : []));
    for (let i = 0; i < ps.length; i += BN) tiles.push(e, list.length + i, Math.min(BN, ps.length - i), 0);
    list.push(...ps);
  }
  const LIST = buf(Uint32Array.from(list)), TILES = buf(Uint32Array.from([tiles.length / 4, 0, 0, 0, ...tiles]));
  const maxTiles = tiles.length / 4;
  for (const [label, flags] of [['experts gate+up GLU', MV.glu], ['experts down (X row = pair)', MV.ownRow]] as const) {
    const glu = (flags & MV.glu) !== 0, eb = rows * (glu ? 2 : 1) * n * 4;
    const W = buf(rand((eb / 4) * E, 0.1));
    compare(`${label} T=${T}`, { type: 'f32', buffers: [W, X, 0, LIST, grid], rows, n, rowBytes: n * 4, nRows: T * K, flags, K, expertBytes: eb, upBytes: glu ? rows * n * 4 : 0, yStride: rows, moe: { tiles: TILES, maxTiles, ids: ids } }, T * K * rows);
  }
}
dev.dispose();
