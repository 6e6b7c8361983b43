/**
 * The release benchmark gate: the baseline format's checks, the comparison at the floor, and
 * `npm run benchmark-gate` on tinyA (lavapipe) against a baseline it clears, a doctored one it must
 * fail, and one it recorded itself.
 */
import { spawnSync } from 'node:child_process';
import * as fs from 'node:fs';
import * as path from 'node:path';
import { describe, expect, it } from 'vitest';
import { compareToBaseline, gateReport, parseBaseline } from '../ts/bench/gate.js';
import { fixture, tmpDir } from './helpers.js';

const ROOT = path.join(__dirname, '..');
const BENCH = '--vulkan --ctx-start 64 --ctx-max 128 --step-mul 2 --gen-tokens 4';
const csv = (rows: string[], head = `# bench: ${BENCH}`) => `${head}\n# machine: test\nfrontier,prefill_tokens,prefill_tps,decode_tokens,decode_tps,kv_bytes,resident_bytes\n${rows.join('\n')}\n`;

describe('baseline files', () => {
  it('parses q36-bench\'s CSV after the # lines: device, bench flags, engine settings, notes', () => {
    const b = parseBaseline(`# device: H200\n# env: Q36_VK_COOPMAT=0 Q36_VK_MVQ=0\n${csv(['2048,2048,2500.5,64,230.1,1,2'])}`);
    expect(b.device!.test('NVIDIA H200')).toBe(true);
    expect(b.env).toEqual({ Q36_VK_COOPMAT: '0', Q36_VK_MVQ: '0' });
    expect(b.benchArgs).toEqual(BENCH.split(' '));
    expect(b.notes).toEqual(['machine: test']);
    expect(b.rows).toEqual([{ frontier: 2048, prefillTps: 2500.5, decodeTps: 230.1 }]);
  });
  it('refuses what it cannot use, naming the line', () => {
    expect(() => parseBaseline('frontier,prefill_tps,decode_tps\n2048,1,1\n', 'b.csv')).toThrow(/b\.csv: no "# bench:" line/);
    expect(() => parseBaseline('# bench: -m x.gguf\nfrontier,prefill_tps,decode_tps\n1,1,1\n', 'b.csv')).toThrow(/b\.csv:1: "# bench:" may not name -m/);
    expect(() => parseBaseline('# env: PATH=/x\n', 'b.csv')).toThrow(/b\.csv:1: "# env:" takes Q36_NAME=VALUE settings, got "PATH=\/x"/);
    expect(() => parseBaseline(`# bench: x\nfrontier,decode_tps\n`, 'b.csv')).toThrow(/b\.csv:2: the header has no "prefill_tps" column/);
    expect(() => parseBaseline(`# bench: x\nfrontier,prefill_tps,decode_tps\n2048,fast,1\n`, 'b.csv')).toThrow(/b\.csv:3: prefill_tps "fast" is not a non-negative number/);
    expect(() => parseBaseline(`# bench: x\nfrontier,prefill_tps,decode_tps\n2048,1,1\n2048,2,2\n`, 'b.csv')).toThrow(/b\.csv:4: frontier 2048 appears twice/);
    expect(() => parseBaseline(`# bench: x\nfrontier,prefill_tps,decode_tps\n`, 'b.csv')).toThrow(/b\.csv: no rows/);
    expect(() => parseBaseline(`# device: (\n`, 'b.csv')).toThrow(/b\.csv:1: "# device:" is not a regular expression/);
  });
  it('the docs/baselines files parse', () => {
    const dir = path.join(ROOT, 'docs', 'baselines');
    for (const f of fs.readdirSync(dir).filter((f) => f.endsWith('.csv'))) expect(() => parseBaseline(fs.readFileSync(path.join(dir, f), 'utf8'), f)).not.toThrow();
  });
});

describe('the comparison', () => {
  const base = parseBaseline(csv(['2048,2048,1000,64,100,1,1', '8192,6144,800,64,90,1,1']));
  it('each row and metric passes at floor × the baseline or above; a missing frontier fails', () => {
    const l = compareToBaseline(base, [{ frontier: 2048, prefillTps: 900, decodeTps: 89.99 }], 0.9);
    expect(l.map((x) => [x.frontier, x.metric, x.pass])).toEqual([[2048, 'prefill', true], [2048, 'decode', false], [8192, 'prefill', false], [8192, 'decode', false]]);
    expect(l[2].measured).toBeUndefined();
    expect(gateReport(l, 0.9).at(-1)).toBe('benchmark gate FAILED: 3 of 4 below 0.9 × the baseline');
    const ok = compareToBaseline(base, [{ frontier: 2048, prefillTps: 1000, decodeTps: 100 }, { frontier: 8192, prefillTps: 720, decodeTps: 81 }], 0.9);
    expect(gateReport(ok, 0.9).at(-1)).toBe('benchmark gate passed: all 4 at or above 0.9 × the baseline');
    expect(() => compareToBaseline(base, [], 1.5)).toThrow(/floor must be in \(0, 1\]/);
  });
});

describe('npm run benchmark-gate (tinyA, lavapipe)', () => {
  const gate = (...args: string[]) => spawnSync(process.execPath, [path.join(ROOT, 'dist/scripts/bench/benchmark-gate.js'), '-m', fixture('tinyA/tinyA-q2.gguf'), ...args], { encoding: 'utf8', timeout: 300_000 });
  it('passes a baseline it clears, fails a doctored one (exit 1, the rows named), records its own and passes it at a low floor', () => {
    const dir = tmpDir();
    try {
      fs.writeFileSync(path.join(dir, 'low.csv'), csv(['64,64,0.01,4,0.01,1,1', '128,64,0.01,4,0.01,1,1']));
      const ok = gate('--baseline', path.join(dir, 'low.csv'));
      expect(ok.stdout).toMatch(/benchmark gate passed: all 4 at or above 0\.9 × the baseline/);
      expect(ok.status).toBe(0);
      fs.writeFileSync(path.join(dir, 'doctored.csv'), csv(['64,64,1e9,4,0.01,1,1', '128,64,0.01,4,1e9,1,1']));
      const bad = gate('--baseline', path.join(dir, 'doctored.csv'));
      expect(bad.stdout).toMatch(/^ +64 +prefill +1000000000\.00 .* FAIL$/m);
      expect(bad.stdout).toMatch(/^ +128 +decode +1000000000\.00 .* FAIL$/m);
      expect(bad.stdout).toMatch(/benchmark gate FAILED: 2 of 4 below 0\.9 × the baseline/);
      expect(bad.status).toBe(1);
      const rec = path.join(dir, 'mine.csv');
      const r = gate('--record', rec, `--bench=${BENCH}`);
      expect(r.status, r.stderr).toBe(0);
      const b = parseBaseline(fs.readFileSync(rec, 'utf8'));
      expect(b.rows.map((x) => x.frontier)).toEqual([64, 128]);
      expect(b.notes.join('\n')).toMatch(/machine: .*\nmodel: tinyA-q2\.gguf \(\d+ bytes\)\ncommit: .*\ndate: 20\d\d-.*\ncommand: npm run benchmark-gate -- -m tinyA-q2\.gguf --record mine\.csv/);
      expect(gate('--record', rec).stderr).toMatch(/--record .*mine\.csv: the file exists/);
      expect(gate('--baseline', rec, '--floor', '0.05').status).toBe(0);
      expect(gate('--baseline', path.join(dir, 'none.csv')).stderr).toMatch(/benchmark-gate: --baseline .*none\.csv: ENOENT/);
      expect(gate('--floor', '2').status).toBe(2);
    } finally {
      fs.rmSync(dir, { recursive: true, force: true });
    }
  }, 600_000);
});
