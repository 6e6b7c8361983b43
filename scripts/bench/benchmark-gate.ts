/**
 * The release benchmark gate (QuarkStar README: `make benchmark-gate`; here `npm run benchmark-gate`):
 * runs q36-bench at a baseline's frontiers with its flags and settings and fails when any prefill or
 * decode rate falls below a floor (default 0.9) of the baseline; --record measures a new baseline.
 *
 *   npm run benchmark-gate -- -m MODEL [--baseline docs/baselines/NAME.csv] [--floor 0.9] [--vk-device N]
 *   npm run benchmark-gate -- -m MODEL --record docs/baselines/NAME.csv [--bench="ARGS"] [--env="Q36_X=V …"] [--device REGEX]
 *
 * Without --baseline, the file in docs/baselines/ whose "# device:" matches this machine's Vulkan
 * device (with no "# env:" settings) is used. Exit: 0 passed (or recorded), 1 below the floor,
 * 2 a usage, baseline or run error. docs/baselines/README.md documents the format.
 */
import { spawn, spawnSync } from 'node:child_process';
import * as fs from 'node:fs';
import * as os from 'node:os';
import * as path from 'node:path';
import { parseArgs } from 'node:util';
import { compareToBaseline, gateReport, parseBaseline, type Baseline, type BaselineRow } from '../../ts/bench/gate.js';
import { ROOT } from '../../ts/paths.js';

// (a 2048-token warm-up first: the first steps of a process pay for pipeline creation)
const DEFAULT_BENCH = '--ctx-start 2048 --ctx-max 32768 --step-mul 4 --gen-tokens 64 --warmup 2048';
const BASELINES = path.join(ROOT, 'docs', 'baselines');

const HELP = `usage: npm run benchmark-gate -- -m MODEL [--baseline docs/baselines/NAME.csv] [--floor 0.9] [--vk-device N]
       npm run benchmark-gate -- -m MODEL --record FILE [--bench="ARGS" (${DEFAULT_BENCH})] [--env="Q36_X=V …"] [--device REGEX]
Runs q36-bench at the baseline's frontiers with its flags ("# bench:") and settings ("# env:") and
fails (exit 1) when any prefill or decode rate is below the floor times the baseline's; without
--baseline, the docs/baselines/ file whose "# device:" matches this machine's Vulkan device and that
has no "# env:" line. --record measures a new baseline (docs/baselines/README.md: the format).`;

class Usage extends Error {}

function deviceName(index: number | undefined): Promise<string> {
  return import('../../ts/vk/addon.js').then(({ loadAddon }) => {
    const dev = new (loadAddon().Device)(index ?? -1);
    try { return dev.info().name; } finally { dev.dispose(); }
  });
}

/** q36-bench's rows (its CSV on stdout); its stderr passes through. */
function runBench(args: string[], env: Record<string, string>): Promise<BaselineRow[]> {
  return new Promise((resolve, reject) => {
    const p = spawn(process.execPath, [path.join(ROOT, 'dist/ts/cli/q36-bench.js'), ...args], { env: { ...process.env, ...env }, stdio: ['ignore', 'pipe', 'inherit'] });
    let out = '';
    p.stdout.setEncoding('utf8').on('data', (d: string) => { out += d; process.stdout.write(d); });
    p.on('error', reject);
    p.on('close', (code) => {
      if (code !== 0) return reject(new Error(`q36-bench exited with status ${code}`));
      try {
        resolve(parseBaseline(`# bench: (this run)\n${out}`, 'q36-bench output').rows);
      } catch (e) {
        reject(e);
      }
    });
  });
}

function pickBaseline(name: string): string {
  let files: string[];
  try { files = fs.readdirSync(BASELINES).filter((f) => f.endsWith('.csv')).sort(); } catch { files = []; }
  const hits = files.filter((f) => {
    try {
      const b = parseBaseline(fs.readFileSync(path.join(BASELINES, f), 'utf8'), f);
      return b.device?.test(name) && Object.keys(b.env).length === 0;
    } catch { return false; }
  });
  if (hits.length !== 1) throw new Usage(`${hits.length === 0 ? 'no baseline' : `${hits.length} baselines (${hits.join(', ')})`} in docs/baselines/ for "${name}": pass --baseline FILE${hits.length === 0 ? ', or record one with --record FILE' : ''}`);
  return path.join(BASELINES, hits[0]);
}

async function main(): Promise<number> {
  const { values: a } = parseArgs({
    options: {
      model: { type: 'string', short: 'm' }, baseline: { type: 'string' }, floor: { type: 'string', default: '0.9' },
      'vk-device': { type: 'string' }, record: { type: 'string' }, bench: { type: 'string' }, env: { type: 'string' }, device: { type: 'string' },
      help: { type: 'boolean', short: 'h' },
    },
  });
  if (a.help) { console.log(HELP); return 0; }
  if (!a.model) throw new Usage('-m MODEL is required');
  if (!fs.existsSync(a.model)) throw new Usage(`-m ${a.model}: no such file`);
  const idx = a['vk-device'] !== undefined ? Number(a['vk-device']) : undefined;
  if (idx !== undefined && !(Number.isInteger(idx) && idx >= 0)) throw new Usage(`--vk-device must be a device index, got "${a['vk-device']}"`);
  const dev = idx !== undefined ? ['--vk-device', String(idx)] : [];
  const floor = Number(a.floor);
  if (!(floor > 0 && floor <= 1)) throw new Usage(`--floor must be in (0, 1], got "${a.floor}"`);

  if (a.record) {
    if (a.baseline) throw new Usage('--record and --baseline are exclusive');
    // checked before measuring (and the write below still refuses to replace a file)
    if (fs.existsSync(a.record)) throw new Usage(`--record ${a.record}: the file exists (a baseline is never overwritten: record under a new name)`);
    const name = await deviceName(idx);
    const bench = (a.bench ?? DEFAULT_BENCH).trim();
    // the header lines are parsed back before anything is measured: a bad --bench or --env fails now
    const lines0 = [`# device: ${a.device ?? `^${name.replace(/[.*+?^${}()|[\]\\]/g, '\\$&')}$`}`, `# bench: ${bench}`, ...(a.env ? [`# env: ${a.env}`] : [])];
    const b0 = parseBaseline(`${lines0.join('\n')}\nfrontier,prefill_tps,decode_tps\n1,0,0\n`, '--record');
    const rows = await runBench(['-m', a.model, ...b0.benchArgs, ...dev], b0.env);
    // the commit as git sees it (a copy without git, e.g. a shipped working tree: unknown)
    const git = (...args: string[]) => spawnSync('git', ['-C', ROOT, ...args], { encoding: 'utf8' });
    const head = git('rev-parse', '--short=12', 'HEAD'), dirty = git('status', '--porcelain', '--untracked-files=no');
    const commit = head.status === 0 ? `${head.stdout.trim()}${dirty.stdout.trim() ? ' (with uncommitted changes)' : ''}` : 'unknown (not a git checkout)';
    const text = [...lines0,
      `# machine: ${name}; ${os.cpus()[0]?.model ?? 'cpu'}; ${(os.totalmem() / 2 ** 30).toFixed(0)} GiB RAM`,
      `# model: ${path.basename(a.model)} (${fs.statSync(a.model).size} bytes)`,
      `# commit: ${commit}`, `# date: ${new Date().toISOString()}`,
      `# command: npm run benchmark-gate -- -m ${path.basename(a.model)} --record ${path.basename(a.record)} --bench="${bench}"${a.env ? ` --env="${a.env}"` : ''}`,
      'frontier,prefill_tps,decode_tps', ...rows.map((r) => `${r.frontier},${r.prefillTps.toFixed(2)},${r.decodeTps.toFixed(2)}`), ''].join('\n');
    parseBaseline(text, a.record);
    fs.writeFileSync(a.record, text, { flag: 'wx' });
    console.log(`recorded ${a.record}`);
    return 0;
  }

  const file = a.baseline ?? pickBaseline(await deviceName(idx));
  let base: Baseline;
  try { base = parseBaseline(fs.readFileSync(file, 'utf8'), file); } catch (e) { throw new Usage((e as NodeJS.ErrnoException).code ? `--baseline ${file}: ${(e as NodeJS.ErrnoException).code}` : (e as Error).message); }
  console.log(`baseline ${file}${base.notes.length ? `\n  ${base.notes.join('\n  ')}` : ''}\nbench ${base.benchArgs.join(' ')}${Object.keys(base.env).length ? `; env ${Object.entries(base.env).map(([k, v]) => `${k}=${v}`).join(' ')}` : ''}; floor ${floor}`);
  const rows = await runBench(['-m', a.model, ...base.benchArgs, ...dev], base.env);
  const lines = compareToBaseline(base, rows, floor);
  for (const l of gateReport(lines, floor)) console.log(l);
  return lines.every((l) => l.pass) ? 0 : 1;
}

main().then((c) => { process.exitCode = c; }, (e) => {
  console.error(`benchmark-gate: ${e instanceof Error ? e.message : String(e)}`);
  process.exitCode = 2;
});
