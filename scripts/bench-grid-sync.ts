/**
 * bench-grid-sync: what a persistent decode kernel's device-wide barrier would cost here (#17),
 * against the ~9.6 µs a dispatch level costs in the decode step (bench-levels). For each
 * workgroup count: whether that many 256-thread workgroups run at once (grid_sync.comp checks it
 * on the device and gives up, flagged, where they do not), whether each round saw the last
 * round's writes, and the GPU time per barrier ((time of R rounds − time of 0) / R, medians of
 * --reps dispatches).
 *   node dist/scripts/bench-grid-sync.js [--vk-device N] [--wg 1,16,64,132,264,528,1056] [--rounds 1000] [--reps 5]
 */
import { parseArgs } from 'node:util';
import { Pipelines } from '../ts/engine/vulkan/graph.js';
import { gridSync } from '../ts/engine/vulkan/grid-sync.js';
import { loadAddon } from '../ts/vk/addon.js';
import { median } from './lib/stats.js';

const a = parseArgs({ options: {
  'vk-device': { type: 'string', default: '-1' }, wg: { type: 'string', default: '1,16,64,132,264,528,1056' },
  rounds: { type: 'string', default: '1000' }, reps: { type: 'string', default: '5' },
} }).values;
const rounds = Number(a.rounds), reps = Number(a.reps);
if (!(Number.isInteger(rounds) && rounds >= 1)) { console.error(`bench-grid-sync: --rounds ${a.rounds}: need an integer ≥ 1`); process.exit(2); }
const dev = new (loadAddon().Device)(Number(a['vk-device']));
const pipes = new Pipelines(dev);
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
dev.dispose();
