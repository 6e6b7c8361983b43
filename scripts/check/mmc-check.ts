/**
 * mmc-check: the matrix-unit matmuls (mmc, mmc_moe and their GLU modules) against the f32 tiles
 * (mm, mm_moe) on random data, in every form the prefill step uses them: dense plain and GLU,
 * routed experts' gate+up (GLU, X row = token) and down (X row = pair), full and partial tiles,
 * for f32 weights and the q2 recipe's block types (q8_0 and iq2_xxs take mmc's SCALED products,
 * f32 and q2_k the split ones). Prints, per form, the largest |Δ| relative to the largest |output|, and
 * exits 1 where one is over --tol.
 * Needs a device with matrix units: the engine's modules (16 × 16 × 16 products, the H200), or,
 * with --fragment 8, mmc.glsl built at run time with 8 × 8 × 8 products and the device's subgroup
 * size, for a device that lists only that shape (Mesa 26's lavapipe: scripts/check/lavapipe-coopmat.sh);
 * --define NAME[,…] adds defines to that build (an experiment's form: scripts/experiments/tiles).
 *
 *   node dist/scripts/check/mmc-check.js [--tokens 5,63,100] [--fragment 16|8 [--define NAME]] [--tol 1e-5] [--device N]
 */
import { parseArgs } from 'node:util';
import { Core } from '../../ts/core/wasm.js';
import { MV, OpList, Pipelines, gridBlob, matvecOp, type MatvecDispatch } from '../../ts/engine/vulkan/graph.js';
import { KERNELS, type KernelDecl } from '../../ts/engine/vulkan/kernels.js';
import { loadAddon } from '../../ts/vk/addon.js';
import { Rng } from '../../ts/model/synth.js';
import { addModules, smallFragmentCompiler } from '../lib/runtime-shaders.js';
import { randomFloats, randomWeights } from '../lib/random-weights.js';

const { values: a } = parseArgs({ options: {
  tokens: { type: 'string', default: '5,63,100' }, fragment: { type: 'string', default: '16' }, tol: { type: 'string', default: '1e-5' },
  types: { type: 'string', default: 'f32,q8_0,iq2_xxs,q2_k' }, device: { type: 'string', default: '-1' }, define: { type: 'string' },
} });
const dev = new (loadAddon().Device)(Number(a.device));
const info = dev.info();
const fragment = Number(a.fragment), tol = Number(a.tol);
if (a.define !== undefined && fragment !== 8) { console.error('mmc-check: --define goes with --fragment 8 (a build at run time)'); process.exit(2); }
const TYPES = a.types!.split(',');
const MODULES = ['mmc', 'mmc_glu', 'mmc_moe', 'mmc_moe_glu'] as const;

/** mmc_* names to the modules that run them: the engine's, or the 8 × 8 × 8 builds added at run time */
class FragmentPipelines extends Pipelines {
  override get(name: string): number {
    return super.get(fragment === 16 || !name.startsWith('mmc') ? name : `mmc${fragment}${name.slice(3)}`);
  }
}
let pipes: Pipelines;
if (fragment === 16) {
  if (!info.coopmat) { console.error(`mmc-check: ${info.name} has no usable matrix units`); process.exit(2); }
  pipes = new Pipelines(dev);
} else if (fragment === 8) {
  const glslc = smallFragmentCompiler('mmc-check', info);
  const decls: KernelDecl[] = [];
  const mods = MODULES.flatMap((m) => TYPES.map((t) => {
    const name = `mmc${fragment}${m.slice(3)}_${t}`;
    decls.push({ ...KERNELS[m], name });
    return { name, source: `shaders/${m}.comp`, defines: [`TYPE_${t.toUpperCase()}`, `CM=${fragment}u`, `SG=${info.subgroupSize}u`, ...(a.define ? a.define.split(',') : [])] };
  }));
  await addModules(mods, glslc);
  pipes = new FragmentPipelines(dev, decls);
} else {
  console.error(`mmc-check: --fragment ${a.fragment}: 16 (the engine's modules) or 8`);
  process.exit(2);
}
const rng = new Rng(7);
const buf = (x: Uint8Array) => { const b = dev.createBuffer(x.byteLength, true); dev.write(b, 0, x); return b; };
const g = gridBlob(new Core());
const grid = dev.createBuffer(g.byteLength, false);
dev.write(grid, 0, g);

let worst = 0;
/** Runs d with mm and with mmc into two fresh outputs; the largest |Δ| / largest |y|. */
function compare(label: string, d: MatvecDispatch, yLen: number): void {
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
  const rel = big > 0 ? m / big : Infinity;
  worst = Math.max(worst, Number.isNaN(rel) ? Infinity : rel);
  const shader = fragment === 16 || !ys[1].shader.startsWith('mmc') ? ys[1].shader : `${ys[1].shader}@${fragment}`;
  console.log(`${rel <= tol ? 'ok  ' : 'FAIL'} ${label.padEnd(34)} ${ys[0].shader} vs ${shader}: max |Δ| ${m.toExponential(2)} of |y| ≤ ${big.toExponential(2)} (${rel.toExponential(2)}) at ${at}`);
}

// two 256-value blocks a row: IQ2_XXS scale spans end inside it
const N = 512, rows = 192;
for (const T of a.tokens!.split(',').map(Number)) {
  const X = buf(randomFloats(rng, T * 2 * N));
  const ids = dev.createBuffer(16, false);
  // routed experts: E experts, K of them a token; pairs grouped by expert as moe_tiles groups them
  const E = 6, K = 2, BN = 32;
  const eOf = Array.from({ length: T * K }, (_, p) => (Math.floor(p / K) * 5 + (p % K) * 3 + (p % 7 === 0 ? 1 : 0)) % E);
  const list: number[] = [], tiles: number[] = [];
  for (let e = 0; e < E; e++) {
    const ps = eOf.flatMap((x, p) => (x === e ? [p] : []));
    for (let i = 0; i < ps.length; i += BN) tiles.push(e, list.length + i, Math.min(BN, ps.length - i), 0);
    list.push(...ps);
  }
  const LIST = buf(new Uint8Array(Uint32Array.from(list).buffer)), TILES = buf(new Uint8Array(Uint32Array.from([tiles.length / 4, 0, 0, 0, ...tiles]).buffer));
  const maxTiles = tiles.length / 4;
  // and, for the 32-value blocks, rows of an odd count of 32-value steps (n not a multiple of 64)
  for (const [type, n] of TYPES.flatMap((t) => (t === 'f32' || t === 'q8_0' ? [[t, N], [t, N - 32]] : [[t, N]]) as [string, number][])) {
    for (const glu of [false, true]) {
      const w = randomWeights(rng, type, rows * 2, n);
      compare(`${type} dense ${glu ? 'GLU ' : ''}T=${T}${n !== N ? ` n=${n}` : ''}`, { type, buffers: [buf(w.bytes), X, 0, ids, grid], rows, n, rowBytes: w.rowBytes, nRows: T, flags: glu ? MV.glu : 0, upBytes: glu ? rows * w.rowBytes : 0 }, T * rows);
    }
    for (const [label, flags] of [['experts gate+up GLU', MV.glu], ['experts down (X row = pair)', MV.ownRow]] as const) {
      const glu = (flags & MV.glu) !== 0;
      const w = randomWeights(rng, type, rows * (glu ? 2 : 1) * E, n), eb = rows * (glu ? 2 : 1) * w.rowBytes;
      compare(`${type} ${label} T=${T}${n !== N ? ` n=${n}` : ''}`, { type, buffers: [buf(w.bytes), X, 0, LIST, grid], rows, n, rowBytes: w.rowBytes, nRows: T * K, flags, K, expertBytes: eb, upBytes: glu ? rows * w.rowBytes : 0, yStride: rows, moe: { tiles: TILES, maxTiles, ids } }, T * K * rows);
    }
  }
}
dev.dispose();
if (!(worst <= tol)) { console.error(`mmc-check: largest relative |Δ| ${worst.toExponential(2)} over ${tol}`); process.exit(1); }
