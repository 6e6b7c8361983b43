/**
 * The release benchmark gate's data: a baseline (q36-bench's CSV with `#` lines saying where, how
 * and when it was measured) and the comparison of a run against it. docs/baselines/README.md
 * documents the format; scripts/bench/benchmark-gate.ts runs q36-bench and applies this.
 */

export interface BaselineRow { frontier: number; prefillTps: number; decodeTps: number }

export interface Baseline {
  /** `# device: REGEX`: the Vulkan device names (q36 --list-devices) this baseline is for */
  device?: RegExp;
  /** `# bench: ARGS`: the q36-bench flags that measured it (frontiers, generated tokens, cache types) */
  benchArgs: string[];
  /** `# env: NAME=VALUE …`: engine settings of the run (e.g. Q36_VK_COOPMAT=0 for the board's arithmetic) */
  env: Record<string, string>;
  /** the other `#` lines (machine, commit, date, command): printed, not interpreted */
  notes: string[];
  rows: BaselineRow[];
}

const ENV_NAME = /^Q36_[A-Z0-9_]+$/;

/** Parses a baseline file's text; every problem names the line. */
export function parseBaseline(text: string, name = 'baseline'): Baseline {
  const b: Baseline = { benchArgs: [], env: {}, notes: [], rows: [] };
  let header: string[] | undefined;
  const lines = text.split(/\r?\n/);
  for (const [i, raw] of lines.entries()) {
    const line = raw.trim(), at = `${name}:${i + 1}`;
    if (line === '') continue;
    if (line.startsWith('#')) {
      const m = /^#\s*([a-z]+):\s*(.*)$/.exec(line);
      if (m?.[1] === 'device') {
        try { b.device = new RegExp(m[2], 'i'); } catch { throw new Error(`${at}: "# device:" is not a regular expression: ${m[2]}`); }
      } else if (m?.[1] === 'bench') {
        b.benchArgs = m[2].split(/\s+/).filter(Boolean);
        const bad = b.benchArgs.find((a) => /^(-m|--model|--ctx)$/.test(a));
        if (bad) throw new Error(`${at}: "# bench:" may not name ${bad} (the gate passes the model; q36-bench sizes the context)`);
      } else if (m?.[1] === 'env') {
        for (const kv of m[2].split(/\s+/).filter(Boolean)) {
          const eq = kv.indexOf('=');
          if (eq < 1 || !ENV_NAME.test(kv.slice(0, eq))) throw new Error(`${at}: "# env:" takes Q36_NAME=VALUE settings, got "${kv}"`);
          b.env[kv.slice(0, eq)] = kv.slice(eq + 1);
        }
      } else b.notes.push(line.replace(/^#\s?/, ''));
      continue;
    }
    const cells = line.split(',').map((c) => c.trim());
    if (!header) {
      header = cells;
      for (const col of ['frontier', 'prefill_tps', 'decode_tps']) if (!header.includes(col)) throw new Error(`${at}: the header has no "${col}" column (q36-bench's CSV header: frontier,prefill_tokens,prefill_tps,…)`);
      continue;
    }
    if (cells.length !== header.length) throw new Error(`${at}: ${cells.length} cells, the header has ${header.length}`);
    const get = (col: string) => {
      const v = Number(cells[header!.indexOf(col)]);
      if (!Number.isFinite(v) || v < 0) throw new Error(`${at}: ${col} "${cells[header!.indexOf(col)]}" is not a non-negative number`);
      return v;
    };
    const row = { frontier: get('frontier'), prefillTps: get('prefill_tps'), decodeTps: get('decode_tps') };
    if (!Number.isInteger(row.frontier) || row.frontier < 1) throw new Error(`${at}: frontier ${row.frontier} is not a positive integer`);
    if (b.rows.some((r) => r.frontier === row.frontier)) throw new Error(`${at}: frontier ${row.frontier} appears twice`);
    b.rows.push(row);
  }
  if (!header) throw new Error(`${name}: no CSV header (frontier,prefill_tps,decode_tps,…)`);
  if (b.rows.length === 0) throw new Error(`${name}: no rows`);
  if (b.benchArgs.length === 0) throw new Error(`${name}: no "# bench:" line (the q36-bench flags that measured it)`);
  return b;
}

export interface GateLine { frontier: number; metric: 'prefill' | 'decode'; baseline: number; measured: number | undefined; ratio: number | undefined; pass: boolean }

/** Each baseline row's prefill and decode against the run's: a pass is at least floor × the baseline. */
export function compareToBaseline(base: Baseline, run: BaselineRow[], floor: number): GateLine[] {
  if (!(floor > 0 && floor <= 1)) throw new Error(`the floor must be in (0, 1], got ${floor}`);
  const out: GateLine[] = [];
  for (const r of base.rows) {
    const got = run.find((x) => x.frontier === r.frontier);
    for (const metric of ['prefill', 'decode'] as const) {
      const baseline = metric === 'prefill' ? r.prefillTps : r.decodeTps;
      const measured = got ? (metric === 'prefill' ? got.prefillTps : got.decodeTps) : undefined;
      const ratio = measured !== undefined && baseline > 0 ? measured / baseline : undefined;
      out.push({ frontier: r.frontier, metric, baseline, measured, ratio, pass: measured !== undefined && measured >= floor * baseline });
    }
  }
  return out;
}

/** The gate's table, one line a (frontier, metric), and its verdict. */
export function gateReport(lines: GateLine[], floor: number): string[] {
  const out = ['frontier  metric   baseline t/s  measured t/s  ratio  verdict'];
  for (const l of lines) {
    out.push(`${String(l.frontier).padStart(8)}  ${l.metric.padEnd(7)}  ${l.baseline.toFixed(2).padStart(12)}  ${(l.measured?.toFixed(2) ?? 'missing').padStart(12)}  ${(l.ratio?.toFixed(3) ?? '-').padStart(5)}  ${l.pass ? 'pass' : 'FAIL'}`);
  }
  const failed = lines.filter((l) => !l.pass).length;
  out.push(failed ? `benchmark gate FAILED: ${failed} of ${lines.length} below ${floor} × the baseline` : `benchmark gate passed: all ${lines.length} at or above ${floor} × the baseline`);
  return out;
}
