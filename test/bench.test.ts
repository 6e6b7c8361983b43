import { spawnSync } from 'node:child_process';
import * as path from 'node:path';
import { describe, expect, it } from 'vitest';
import { CSV_HEADER, frontierList, tokenSequence } from '../ts/bench/frontiers.js';
import { fixture } from './helpers.js';

const ROOT = path.resolve(__dirname, '..');
const bench = (...args: string[]) => spawnSync(process.execPath, [path.join(ROOT, 'dist/ts/cli/q36-bench.js'), ...args], { encoding: 'utf8', timeout: 600_000 });

function checkCsv(out: string, frontiers: number[], gen: number) {
  const lines = out.trim().split('\n');
  expect(lines[0]).toBe(CSV_HEADER);
  expect(lines).toHaveLength(frontiers.length + 1);
  let prev = 0;
  lines.slice(1).forEach((l, i) => {
    const f = l.split(',').map(Number);
    expect(f).toHaveLength(7);
    expect(f.every(Number.isFinite)).toBe(true);
    expect(f[0]).toBe(frontiers[i]);
    expect(f[1]).toBe(frontiers[i] - prev); // each row measures only the newly added interval
    expect(f[2]).toBeGreaterThan(0);
    expect(f[3]).toBe(gen);
    expect(f[4]).toBeGreaterThan(0);
    expect(f[5]).toBeGreaterThan(0);
    prev = frontiers[i];
  });
}

describe('q36-bench', () => {
  it('frontier lists and token sequences', () => {
    expect(frontierList(2048, 32768, { mul: 2 })).toEqual([2048, 4096, 8192, 16384, 32768]);
    expect(frontierList(2048, 10240, { incr: 4096 })).toEqual([2048, 6144, 10240]);
    expect(() => frontierList(10, 5, { incr: 1 })).toThrow(/ctx-start/);
    expect(() => frontierList(1, 5, { incr: 1, mul: 2 })).toThrow(/at most one/);
    // the QuarkStar README's command gives no step: frontiers every 2048 tokens
    expect(frontierList(2048, 10240, {})).toEqual([2048, 4096, 6144, 8192, 10240]);
    expect(tokenSequence([1, 2, 3], 7)).toEqual([1, 2, 3, 1, 2, 3, 1]);
  });

  it('CPU: a tiny frontier sweep on tinyA gives a well-formed CSV', () => {
    const r = bench('--cpu', '-m', fixture('tinyA/tinyA-q2.gguf'), '--ctx-start', '32', '--ctx-max', '96', '--step-incr', '32', '--gen-tokens', '4', '--warmup', '8');
    expect(r.status, r.stderr).toBe(0);
    checkCsv(r.stdout, [32, 64, 96], 4);
  });

  it('Vulkan (lavapipe in CI): the same sweep', () => {
    const r = bench('--vulkan', '-m', fixture('tinyA/tinyA-q2.gguf'), '--ctx-start', '16', '--ctx-max', '64', '--step-mul', '2', '--gen-tokens', '2');
    expect(r.status, r.stderr).toBe(0);
    checkCsv(r.stdout, [16, 32, 64], 2);
  });

  it.each(['--cpu', '--vulkan'])('%s --mtp FILE (and --draft ngram --mtp FILE): the drafted probe gives the plain probe\'s tokens, its columns and line', (backend) => {
    for (const more of [[], ['--draft', 'ngram']]) {
      const r = bench(backend, '-m', fixture('tinyA/tinyA-bf16.gguf'), '--ctx-start', '32', '--ctx-max', '64', '--step-mul', '2', '--gen-tokens', '6', '--mtp', fixture('mtp/tinyA-mtp-only.gguf'), '--mtp-draft', '2', ...more);
      expect(r.status, r.stderr).toBe(0);
      const lines = r.stdout.trim().split('\n');
      expect(lines[0]).toBe(`${CSV_HEADER},draft_decode_tps,draft_steps,accepted_per_step`);
      expect(lines).toHaveLength(3);
      const kind = more.length ? 'ngram\\+mtp' : 'mtp';
      // the step holds a token and the larger of the two limits (--draft-max 4 by default, --mtp-draft 2)
      expect(r.stderr).toMatch(new RegExp(`drafts at 32: ${kind}, [\\d.]+ t/s .* greedy-exact yes; drafter [\\d.]+ ms in \\d+ proposals; draft step of 1\\.\\.${more.length ? 5 : 3} rows`));
      expect(r.stderr).toMatch(new RegExp(`drafts at 64: ${kind}, .* greedy-exact yes`));
    }
  }, 600_000);

  it('bad arguments exit 2 with a message', () => {
    const r = bench('--cpu', '-m', fixture('tinyA/tinyA-q2.gguf'), '--ctx-start', '64', '--ctx-max', '32', '--step-incr', '8');
    expect(r.status).toBe(2);
    expect(r.stderr).toMatch(/ctx-start/);
    expect(bench('--cpu', '--gen-tokens', 'x').stderr).toMatch(/--gen-tokens expects a number/);
    const c = bench('--cpu', '-m', fixture('tinyA/tinyA-q2.gguf'), '--ctx', '64');
    expect(c.status).toBe(2);
    expect(c.stderr).toMatch(/--ctx is not a q36-bench flag/);
    // the engine flags come from the shared table: a bad KV type is named like in q36
    expect(bench('--cpu', '-m', fixture('tinyA/tinyA-q2.gguf'), '--ctx-start', '16', '--ctx-max', '32', '--step-incr', '8', '-ctk', 'q5_9').stderr).toMatch(/cache-type-k must be one of/);
  });
});
