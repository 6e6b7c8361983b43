/**
 * One argument style for the seven tools (options.ts parseCli; q36 checks its citty table through
 * it): an unknown flag, a flag without its value, a value given to a switch and a stray word are
 * each refused in the same words, with exit status 2, before anything loads; a negative number
 * after a flag that takes a value is that value.
 */
import { spawnSync } from 'node:child_process';
import * as path from 'node:path';
import { describe, expect, it } from 'vitest';

const ROOT = path.resolve(__dirname, '..');
const TOOLS = ['q36', 'q36-server', 'q36-agent', 'q36-bench', 'q36-eval', 'q36-quantize', 'q36-imatrix'];
const run = (tool: string, args: string[]) => spawnSync(process.execPath, [path.join(ROOT, 'dist/ts/cli', `${tool}.js`), ...args], { encoding: 'utf8', timeout: 30_000 });

describe('the seven tools read arguments alike', () => {
  it.each(TOOLS)('%s: an unknown flag, a missing value, a value to a switch, a stray word', (tool) => {
    const unknown = run(tool, ['--tmep', '0.5']);
    expect(unknown.status).toBe(2);
    expect(unknown.stderr.trim()).toBe(`${tool}: unknown flag --tmep (see --help)`);
    // every tool has -h/--help as a switch, and --cpu except q36-quantize
    const sw = tool === 'q36-quantize' ? '--check' : '--cpu';
    const valued = run(tool, [`${sw}=yes`]);
    expect(valued.status).toBe(2);
    expect(valued.stderr.trim()).toBe(`${tool}: ${sw} takes no value (see --help)`);
    const flag = tool === 'q36-imatrix' ? '--chunks' : '--ctx';
    const missing = run(tool, [flag]);
    expect(missing.status).toBe(2);
    expect(missing.stderr.trim()).toBe(`${tool}: ${flag} needs a value (see --help)`);
    if (tool !== 'q36-quantize') { // its two files are positional
      const stray = run(tool, ['stray']);
      expect(stray.status).toBe(2);
      expect(stray.stderr.trim()).toBe(`${tool}: unexpected argument "stray" (see --help)`);
    }
  });

  it('a negative number after a flag is its value (refused by the flag\'s own range, not as a flag)', () => {
    expect(run('q36-bench', ['--cpu', '--ctx-start', '-5']).stderr).toMatch(/--ctx-start must be ≥ 1, got -5/);
    expect(run('q36', ['--cpu', '-n', '-3', '-p', 'x']).stderr).toMatch(/-n must be ≥ 0, got -3/);
  });
});
