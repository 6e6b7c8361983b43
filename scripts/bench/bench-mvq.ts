/**
 * bench-mvq: mvq.comp (the activation row as int8 levels, packed integer dot products) against
 * matvec.comp on the decode shapes, isolated: the GPU time of each (median of --reps, timestamps)
 * and the largest difference of their outputs relative to the largest output. The levels are made
 * on the host the way rmsnorm.comp's quant makes them. --tokens: the dense shapes also over that
 * many plain activation rows (a batched step's), the f32 kernel graph.ts picks (matmul) against
 * each several-row mvq form (mvq2, mvq4), one column each. --lanes: every mvq dispatch at that many
 * lanes a row (16, 32, 64) instead of the engine's choice (graph.ts mvqLanes). --wide: each one-row
 * shape also at 64- and 256-thread workgroups (mvq, mvqw), checked bit-identical.
 *   node dist/scripts/bench/bench-mvq.js [--scale 1] [--reps 20] [--types iq2_xxs,q8_0] [--pairs 8,64] [--tokens 2,8] [--lanes 32] [--wide]
 */
import { parseArgs } from 'node:util';
import { Core } from '../../ts/core/wasm.js';
import { OpList, Pipelines, gridBlob, matvecOp } from '../../ts/engine/vulkan/graph.js';
import { GgmlType, rowBytes } from '../../ts/gguf/index.js';
import { Rng, fillRandom } from '../../ts/model/synth.js';
import { loadAddon } from '../../ts/vk/addon.js';
import { gpuTime } from '../lib/gpu-time.js';

const a = parseArgs({ options: {
  reps: { type: 'string', default: '20' }, scale: { type: 'string', default: '1' },
  types: { type: 'string', default: 'iq2_xxs,q8_0,q2_k' }, pairs: { type: 'string', default: '8,64' },
  tokens: { type: 'string', default: '' }, lanes: { type: 'string' }, wide: { type: 'boolean' },
} }).values;
const reps = Number(a.reps), scale = Number(a.scale);
const dev = new (loadAddon().Device)(-1);
const pipes = new Pipelines(dev);
const grid = (() => { const g = gridBlob(new Core()); const b = dev.createBuffer(g.byteLength, false); dev.write(b, 0, g); return b; })();
const round = (n: number, m: number) => Math.max(m, Math.round(n / m) * m);
const f = Math.fround;

/** x ≈ s0·a0 + s1·a1 + s2·a2 per 32-value unit (mvq.comp's layout: levels [row][level][half][unit] as 16 bytes, scales [row][unit] as vec4) */
function levels(x: Float32Array, n: number, rows: number): { q: Uint8Array; s: Float32Array } {
  const nu = n / 32, q = new Int8Array(rows * 3 * nu * 32), s = new Float32Array(rows * nu * 4);
  for (let j = 0; j < rows; j++) for (let u = 0; u < nu; u++) {
    let amax = 0;
    for (let i = 0; i < 32; i++) amax = Math.max(amax, Math.abs(x[j * n + u * 32 + i]));
    const s0 = f(amax / 127), sc = [s0, f(s0 / 254), f(f(s0 / 254) / 254)];
    const r = Float32Array.from({ length: 32 }, (_, i) => x[j * n + u * 32 + i]);
    for (let k = 0; k < 3; k++) {
      s[(j * nu + u) * 4 + k] = sc[k];
      for (let i = 0; i < 32; i++) {
        const v = sc[k] === 0 ? 0 : Math.max(-127, Math.min(127, Math.round(r[i] / sc[k])));
        r[i] = f(r[i] - f(v * sc[k]));
        // byte i of the unit: half i >> 4, within it byte i & 15
        q[(((j * 3 + k) * 2 + (i >> 4)) * nu + u) * 16 + (i & 15)] = v;
      }
    }
  }
  return { q: new Uint8Array(q.buffer), s };
}

const time = (build: (ops: OpList) => void) => gpuTime({ dev, pipes, reps, warmMs: 300 }, build).seconds;

const NAMES: Record<string, GgmlType> = { q8_0: GgmlType.Q8_0, iq2_xxs: GgmlType.IQ2_XXS, q2_k: GgmlType.Q2_K };
interface Shape { what: string; rows: number; n: number; pairs?: number; down?: boolean; tokens?: number }
const DENSE: Shape[] = [
  { what: 'LM head', rows: round(248320 * scale, 64), n: 2048 },
  { what: 'in-projection', rows: round(12352 * scale, 64), n: 2048 },
  { what: 'out-projection', rows: round(2048 * scale, 64), n: 4096 },
];
const TOKENS = a.tokens ? a.tokens.split(',').map(Number) : [];
const FORMS = [2, 4] as const;
const lanes = a.lanes ? Number(a.lanes) as 16 | 32 | 64 : undefined;
if (lanes !== undefined && ![16, 32, 64].includes(lanes)) throw new Error('bench-mvq: --lanes is 16, 32 or 64');
const SHAPES: Shape[] = [
  ...DENSE,
  ...a.pairs!.split(',').map(Number).flatMap((p) => [
    { what: `gate+up GLU ${p} pairs`, rows: round(512 * scale, 8), n: 2048, pairs: p },
    { what: `down ${p} pairs`, rows: round(2048 * scale, 64), n: 512, pairs: p, down: true },
  ]),
  ...TOKENS.flatMap((t) => DENSE.map((d) => ({ ...d, what: `${d.what} ${t} rows`, tokens: t }))),
];
const rng = new Rng(7);
console.log(`# bench-mvq ${new Date().toISOString()} ${dev.info().name} reps ${reps} scale ${scale} lanes ${lanes ?? 'the engine\'s'}`);
console.log(`type,shape,matvec_us,mvq_us,max_abs_diff/max_abs${TOKENS.length ? FORMS.map((t) => `,mvq${t}_us`).join('') : ''}${a.wide ? ',mvq_64_us,mvqw_256_us' : ''}`);
for (const name of a.types!.split(',')) {
  const type = NAMES[name];
  for (const sh of SHAPES) {
    const rb = rowBytes(type, sh.n), nExp = sh.pairs ? 256 : 1, glu = !!sh.pairs && !sh.down;
    const expertBytes = rb * sh.rows * (glu ? 2 : 1), wBytes = expertBytes * nExp, nRows = sh.pairs ?? sh.tokens ?? 1;
    const w = dev.createBuffer(wBytes, false);
    const chunkRows = Math.max(1, Math.floor(Math.min(wBytes, 64 << 20) / rb)), chunk = new Uint8Array(chunkRows * rb);
    fillRandom(type, chunk, chunkRows * sh.n, rng, { sigma: 0.02 });
    for (let o = 0; o < wBytes; o += chunk.length) dev.write(w, o, chunk.subarray(0, Math.min(chunk.length, wBytes - o)));
    const xv = Float32Array.from({ length: sh.n * nRows }, () => rng.normal());
    const L = levels(xv, sh.n, nRows);
    const x = dev.createBuffer(xv.byteLength, false), xq = dev.createBuffer(L.q.byteLength, false), xs = dev.createBuffer(L.s.byteLength, false);
    dev.write(x, 0, new Uint8Array(xv.buffer)); dev.write(xq, 0, L.q); dev.write(xs, 0, new Uint8Array(L.s.buffer));
    const ids = dev.createBuffer(4 * Math.max(16, nRows), false);
    dev.write(ids, 0, new Uint8Array(Uint32Array.from({ length: Math.max(16, nRows) }, (_, i) => (i * 37) % nExp).buffer));
    const yBytes = sh.rows * nRows * 4, y1 = dev.createBuffer(yBytes, false), y2 = dev.createBuffer(yBytes, false);
    const flags = sh.pairs ? (sh.down ? 1 | 2 : 1 | 2 | 4) : 0, upBytes = glu ? rb * sh.rows : 0;
    const mv = (ops: OpList) => matvecOp(ops, { type: name, rowBytes: rb, buffers: [w, x, y1, ids, grid], rows: sh.rows, n: sh.n, nRows, flags, K: 8, expertBytes, upBytes });
    const q = (ops: OpList) => matvecOp(ops, { type: name, rowBytes: rb, buffers: [w, x, y2, ids, grid], rows: sh.rows, n: sh.n, nRows, flags, K: 8, expertBytes, upBytes, levels: { q: xq, s: xs }, mvqLanes: lanes });
    const tm = time(mv), tq = sh.tokens ? 0 : time(q);
    // several plain rows: every mvq form, each output bit-identical to the first's (the outputs
    // compared with the f32 kernel's below are mvq4's)
    let first: Uint8Array | undefined, same = true;
    const forms = !sh.tokens ? [] : FORMS.map((t) => {
      const s = time((ops) => matvecOp(ops, { type: name, rowBytes: rb, buffers: [w, x, y2, ids, grid], rows: sh.rows, n: sh.n, nRows, levels: { q: xq, s: xs }, mvqTokens: t, mvqLanes: lanes }));
      const out = new Uint8Array(dev.read(y2, 0, yBytes));
      if (!first) first = out; else same &&= Buffer.compare(first, out) === 0;
      return s;
    });
    // --wide: the one-row form at 64- and 256-thread workgroups, outputs bit-identical
    let wide = '';
    if (a.wide && !sh.tokens) {
      const ref = new Uint8Array(dev.read(y2, 0, yBytes));
      const tw = [false, true].map((wd) => {
        const s = time((ops) => matvecOp(ops, { type: name, rowBytes: rb, buffers: [w, x, y2, ids, grid], rows: sh.rows, n: sh.n, nRows, flags, K: 8, expertBytes, upBytes, levels: { q: xq, s: xs }, mvqLanes: lanes, mvqWide: wd }));
        return `${(s * 1e6).toFixed(1)}${Buffer.compare(ref, new Uint8Array(dev.read(y2, 0, yBytes))) === 0 ? '' : ' DIFFERS'}`;
      });
      wide = `,${tw.join(',')}`;
    }
    const r1 = new Float32Array(dev.read(y1, 0, yBytes)), r2 = new Float32Array(dev.read(y2, 0, yBytes));
    let md = 0, mx = 0;
    for (let i = 0; i < r1.length; i++) { md = Math.max(md, Math.abs(r1[i] - r2[i])); mx = Math.max(mx, Math.abs(r1[i])); }
    const us = (t: number) => (t * 1e6).toFixed(1);
    console.log(`${name},${sh.what} ${sh.rows}x${sh.n},${us(tm)},${sh.tokens ? '' : us(tq)},${(md / mx).toExponential(2)}${forms.map((t) => `,${us(t)}`).join('')}${sh.tokens ? (same ? ',forms bit-identical' : ',FORMS DIFFER') : ''}${wide}`);
    [w, x, xq, xs, ids, y1, y2].forEach((b) => dev.freeBuffer(b));
  }
}
dev.dispose();
