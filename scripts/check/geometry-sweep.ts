/**
 * geometry-sweep: every geometry of scripts/lib/geometries.ts on the CPU and on Vulkan (the unit
 * test runs the CI subset on lavapipe). Prints one line per comparison; exit 1 on any failure.
 *
 *   node dist/scripts/check/geometry-sweep.js [--kv f16|q8_0] [--prefills 1,17,64,65,513] [--decode 8]
 */
import * as fs from 'node:fs';
import * as os from 'node:os';
import * as path from 'node:path';
import { parseArgs } from 'node:util';
import { passes } from '../lib/backend-compare.js';
import { SWEEP } from '../lib/geometries.js';
import { runGeometry } from '../lib/sweep-run.js';

const a = parseArgs({ options: { kv: { type: 'string', default: 'f16' }, prefills: { type: 'string', default: '1,17,64,65,513' }, decode: { type: 'string', default: '8' } } }).values;
const kv = a.kv === 'q8_0' ? { k: 'q8_0', v: 'q4_0' } as const : { k: 'f16', v: 'f16' } as const;
const prefills = a.prefills!.split(',').map(Number);
const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'q36-sweep-'));
let failed = 0;
for (const sg of SWEEP) {
  try {
    const r = await runGeometry(sg, { dir, prefills, decode: Number(a.decode), kv });
    if (sg.refuse) {
      const ok = !!r.refused && sg.refuse.test(r.refused);
      if (!ok) failed++;
      console.log(`${ok ? 'ok  ' : 'FAIL'} ${sg.name}: refused: ${r.refused}`);
      continue;
    }
    for (const x of r.results) {
      const ok = passes(x);
      if (!ok) failed++;
      console.log(`${ok ? 'ok  ' : 'FAIL'} ${sg.name}: ${x.what}: max ${x.max.toExponential(2)} p99 ${x.p99.toExponential(2)} (${x.positions} positions)`);
    }
  } catch (e) {
    failed++;
    console.log(`FAIL ${sg.name}: ${(e as Error).message}`);
  }
}
fs.rmSync(dir, { recursive: true, force: true });
console.log(`${SWEEP.length} geometries, kv ${kv.k}/${kv.v}: ${failed} failure(s)`);
process.exitCode = failed ? 1 : 0;
