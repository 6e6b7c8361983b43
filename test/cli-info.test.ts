import { execFileSync, spawnSync } from 'node:child_process';
import * as path from 'node:path';
import { describe, expect, it } from 'vitest';
import { fixture } from './helpers.js';

const ROOT = path.resolve(__dirname, '..');
const q36 = (...args: string[]) => spawnSync(process.execPath, [path.join(ROOT, 'dist/ts/cli/q36.js'), ...args], { encoding: 'utf8' });

describe('q36 --info', () => {
  it('prints the shape of every oracle GGUF', () => {
    for (const f of ['tinyA/tinyA-q2.gguf', 'tinyR/tinyR-bf16.gguf']) {
      const r = q36('--info', '-m', fixture(f));
      expect(r.status).toBe(0);
      expect(r.stdout).toMatch(/layers 4 \(3 Gated DeltaNet \+ 1 gated attention\)/);
      expect(r.stdout).toMatch(/status +OK/);
    }
  });
  it('fails with exit 2 and a one-line error for a missing or non-GGUF file', () => {
    const r = q36('--info', '-m', '/nonexistent.gguf');
    expect(r.status).toBe(2);
    expect(r.stderr).toMatch(/model file "\/nonexistent.gguf" not found/);
    const r2 = q36('--info', '-m', path.join(ROOT, 'package.json'));
    expect(r2.status).toBe(2);
    expect(r2.stderr).toMatch(/not a GGUF file/);
  });
  it('tools that have not landed say so and exit non-zero', () => {
    for (const tool of ['q36-server', 'q36-agent', 'q36-bench', 'q36-eval']) {
      let code = 0, err = '';
      try { execFileSync(process.execPath, [path.join(ROOT, `dist/ts/cli/${tool}.js`)], { encoding: 'utf8', stdio: 'pipe' }); } catch (e) {
        code = (e as { status: number }).status; err = String((e as { stderr: string }).stderr);
      }
      expect(code).not.toBe(0);
      expect(err).toMatch(/not built yet/);
    }
  });
});
