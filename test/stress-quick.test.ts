/**
 * The stress suite's CI subset (`node dist/scripts/qa/stress.js --quick`): every phase runs at a
 * smaller count; the run must report 0 crashes, 0 5xx, 0 damaged or foreign cache files loaded
 * and 0 wrong answers (the script exits 1 otherwise). The full run is `npm run test:stress`.
 */
import { spawnSync } from 'node:child_process';
import * as path from 'node:path';
import { describe, expect, it } from 'vitest';

const ROOT = path.resolve(__dirname, '..');

describe('stress suite (quick)', () => {
  it('hostile GGUF, cache files, HTTP bodies, WebSocket frames, concurrent aborting clients, kill -9 and download servers: all clean', () => {
    const r = spawnSync(process.execPath, [path.join(ROOT, 'dist/scripts/qa/stress.js'), '--quick', '--seed', '7'], { encoding: 'utf8', timeout: 300_000 });
    console.log(r.stdout);
    expect(r.status, r.stderr).toBe(0);
    const total = /^total +tried +(\d+) +clean +(\d+) +crashes (\d+) +5xx (\d+) +foreign-loaded (\d+) +wrong (\d+)$/m.exec(r.stdout);
    expect(total).not.toBeNull();
    expect(Number(total![1])).toBeGreaterThan(1000);
    expect(total!.slice(3).map(Number)).toEqual([0, 0, 0, 0]);
    // every phase ran (a phase dropped from the script would still leave a clean total)
    for (const phase of ['gguf', 'kvfile', 'files', 'http', 'ws', 'clients', 'models', 'kill9', 'download']) expect(r.stdout, phase).toMatch(new RegExp(`^${phase} +tried +[1-9]`, 'm'));
  });
});
