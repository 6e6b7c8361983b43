/**
 * bench-grid-sync: what a persistent decode kernel's device-wide barrier would cost here (#17),
 * against the ~9.6 µs a dispatch level costs in the decode step (bench-levels). For each
 * workgroup count: whether that many 256-thread workgroups run at once (grid_sync.comp checks it
 * on the device and gives up, flagged, where they do not), whether each round saw the last
 * round's writes, and the GPU time per barrier ((time of R rounds − time of 0) / R, medians of
 * --reps dispatches).
 * Then a level with work (grid_chain.comp): a chain of --chain-rounds dependent f16 products
 * x ← tanh(W·x) over n (--chain-n, the shape of the decode step's out-projections; --chain-mats
 * matrices in turn, more than the L2 holds), as one persistent dispatch of each --chain-wg
 * workgroup count and as a dispatch a round (a workgroup per 256/subgroup rows, pipeline barriers
 * between them): wall µs a round of each (medians of --reps submissions; the submission's own
 * cost spread over the rounds) and whether the two left the same bits.
 *   node dist/scripts/experiments/grid-sync/bench.js [--vk-device N] [--wg 1,16,64,132,264,528,1056] [--rounds 1000] [--reps 5]
 *     [--chain-n 512,2048,4096] [--chain-wg 132,264,528] [--chain-rounds 400] [--chain-mats 8]
 */
import { parseArgs } from 'node:util';
import { GRID_CHAIN_MAX_N, gridChain, gridPipelines, gridSync } from './grid-sync.js';
import { loadAddon } from '../../../ts/vk/addon.js';
import { median } from '../../lib/stats.js';

const a = parseArgs({ options: {
  'vk-device': { type: 'string', default: '-1' }, wg: { type: 'string', default: '1,16,64,132,264,528,1056' },
  rounds: { type: 'string', default: '1000' }, reps: { type: 'string', default: '5' },
  'chain-n': { type: 'string', default: '512,2048,4096' }, 'chain-wg': { type: 'string', default: '132,264,528' },
  'chain-rounds': { type: 'string', default: '400' }, 'chain-mats': { type: 'string', default: '8' },
} }).values;
const rounds = Number(a.rounds), reps = Number(a.reps);
if (!(Number.isInteger(rounds) && rounds >= 1)) { console.error(`bench-grid-sync: --rounds ${a.rounds}: need an integer ≥ 1`); process.exit(2); }
const dev = new (loadAddon().Device)(Number(a['vk-device']));
const pipes = await gridPipelines(dev);
console.log(`# bench-grid-sync ${new Date().toISOString()} ${dev.info().name}; ${rounds} rounds, median of ${reps}`);
console.log('workgroups,co_resident,consistent,dispatch_us,barrier_us');
for (const nWG of a.wg!.split(',').map(Number)) {
  // warm-up (clocks), then the medians of the empty and the full dispatch
  gridSync({ dev, pipes, nWG, rounds });
  const t0: number[] = [], tr: number[] = [];
  let coResident = true, consistent = true;
  for (let i = 0; i < reps; i++) {
    const e = gridSync({ dev, pipes, nWG, rounds: 0 }), f = gridSync({ dev, pipes, nWG, rounds });
    t0.push(e.seconds); tr.push(f.seconds);
    coResident &&= e.coResident && f.coResident;
    consistent &&= f.consistent;
  }
  const per = coResident ? (((median(tr) - median(t0)) / rounds) * 1e6).toFixed(3) : '';
  console.log(`${nWG},${coResident ? 'yes' : 'no'},${coResident ? (consistent ? 'yes' : 'NO') : ''},${(median(t0) * 1e6).toFixed(1)},${per}`);
}

const chainRounds = Number(a['chain-rounds']), nMat = Number(a['chain-mats']);
const chainNs = a['chain-n'] ? a['chain-n'].split(',').map(Number) : [];
for (const n of chainNs) if (!(Number.isInteger(n) && n >= 2 && n % 2 === 0 && n <= GRID_CHAIN_MAX_N)) { console.error(`bench-grid-sync: --chain-n ${n}: need even sizes 2 … ${GRID_CHAIN_MAX_N}`); process.exit(2); }
if (chainNs.length) {
  console.log(`# grid_chain: ${chainRounds} rounds of x ← tanh(W·x), ${nMat} f16 matrices in turn, wall µs a round, median of ${reps}`);
  console.log('n,matrix_MB,mode,workgroups,co_resident,us_per_round,same_bits_as_dispatched');
}
for (const n of chainNs) {
  // f16 weights of magnitude 2^-7 … 2^-5, random signs (an LCG: fast for 268 MB at n = 4096)
  const bits = new Uint16Array(nMat * n * n);
  let seed = 12345;
  for (let i = 0; i < bits.length; i++) {
    seed = (Math.imul(seed, 1664525) + 1013904223) >>> 0;
    bits[i] = ((seed >>> 31) << 15) | ((8 + ((seed >>> 20) % 3)) << 10) | ((seed >>> 4) & 1023);
  }
  const w = { buf: dev.createBuffer(bits.byteLength, false), bytes: bits.byteLength };
  dev.write(w.buf, 0, new Uint8Array(bits.buffer));
  const x0 = new Float32Array(n).map((_, i) => Math.sin(i));
  const time = (persist: boolean, nWG: number) => {
    const c = gridChain({ dev, pipes, nWG, rounds: chainRounds, persist, n, w, nMat, x0 });
    try {
      c.run();
      const t: number[] = [];
      for (let i = 0; i < reps; i++) t.push(c.run());
      return { us: (median(t) * 1000) / chainRounds, ...c.result() };
    } finally {
      c.dispose();
    }
  };
  const perWG = 256 / dev.info().subgroupSize, natural = Math.ceil(n / perWG);
  const ref = time(false, natural);
  const mb = ((n * n * 2) / 1e6).toFixed(1);
  console.log(`${n},${mb},dispatched,${natural},yes,${ref.us.toFixed(2)},`);
  for (const nWG of a['chain-wg']!.split(',').map(Number)) {
    const p = time(true, nWG);
    const same = p.coResident ? (p.x.every((v, i) => Object.is(v, ref.x[i])) ? 'yes' : 'NO') : '';
    console.log(`${n},${mb},persistent,${nWG},${p.coResident ? 'yes' : 'no'},${p.coResident ? p.us.toFixed(2) : ''},${same}`);
  }
  dev.freeBuffer(w.buf);
}
dev.dispose();
