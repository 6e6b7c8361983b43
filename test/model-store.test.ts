/**
 * The model store (#48 item 1): where a command finds its model without -m (Q36_MODEL, the
 * QuarkStar layout ./gguf/, the store Q36_MODELS or ~/.q36/models), `q36 models`, and `q36 -p`
 * from any directory once the model is in the store.
 */
import { spawnSync } from 'node:child_process';
import * as fs from 'node:fs';
import * as path from 'node:path';
import { describe, expect, it } from 'vitest';
import { DEFAULT_FILE, defaultModel, missingModelHint, storeDir } from '../ts/cli/model-store.js';
import { fixture, tmpDir } from './helpers.js';

const ROOT = path.resolve(__dirname, '..');

describe('where the default model is', () => {
  it('Q36_MODEL wins; then ./gguf/ where it holds the default file; then the store', () => {
    const cwd = tmpDir(), home = tmpDir();
    const at = { cwd, home };
    expect(storeDir({}, at)).toBe(path.join(home, '.q36', 'models'));
    expect(storeDir({ modelStore: 'rel/store' }, at)).toBe(path.join(cwd, 'rel', 'store'));
    expect(defaultModel({}, at)).toBe(path.join(home, '.q36', 'models', DEFAULT_FILE));
    expect(defaultModel({ modelStore: '/m' }, at)).toBe(path.join('/m', DEFAULT_FILE));
    fs.mkdirSync(path.join(cwd, 'gguf'));
    fs.writeFileSync(path.join(cwd, 'gguf', DEFAULT_FILE), '');
    expect(defaultModel({ modelStore: '/m' }, at)).toBe(path.join(cwd, 'gguf', DEFAULT_FILE));
    expect(defaultModel({ modelFile: '/x/my.gguf', modelStore: '/m' }, at)).toBe('/x/my.gguf');
  });
  it('a missing default model says where it looked and how to fetch it', () => {
    const at = { cwd: '/w', home: '/h' };
    expect(missingModelHint(path.join('/h/.q36/models', DEFAULT_FILE), {}, at)).toBe('pass -m FILE, set Q36_MODEL, or fetch it into the model store /h/.q36/models with: q36 download q2-imatrix');
    expect(missingModelHint('/x/my.gguf', { modelFile: '/x/my.gguf' }, at)).toBe('set by Q36_MODEL');
    expect(missingModelHint('/x/other.gguf', {}, at)).toBeUndefined();
  });
});

describe('the commands', () => {
  const q36 = (args: string[], cwd: string, env: Record<string, string>) => {
    const e: NodeJS.ProcessEnv = { ...process.env };
    delete e.Q36_MODEL; delete e.Q36_MODELS;
    return spawnSync(process.execPath, [path.join(ROOT, 'dist/ts/cli/q36.js'), ...args], { cwd, env: { ...e, ...env }, encoding: 'utf8', timeout: 120_000 });
  };
  it('q36 models lists the store and ./gguf with sizes and names; q36 -p works from any folder with the model in the store', () => {
    const cwd = tmpDir(), home = tmpDir(), store = path.join(home, '.q36', 'models');
    const none = q36(['models'], cwd, { HOME: home });
    expect(none.stdout).toContain(`${store}: no models`);
    expect(none.stdout).toMatch(new RegExp(`default model: ${store.replace(/[.]/g, '\\.')}/${DEFAULT_FILE.replace(/[.]/g, '\\.')} \\(missing: q36 download q2-imatrix\\)`));
    const missing = q36(['--cpu', '-p', 'hi', '-n', '1'], cwd, { HOME: home });
    expect(missing.status).toBe(2);
    expect(missing.stderr).toMatch(/not found \(pass -m FILE, set Q36_MODEL, or fetch it into the model store .* with: q36 download q2-imatrix\)/);
    fs.mkdirSync(store, { recursive: true });
    fs.copyFileSync(fixture('tinyA/tinyA-q2.gguf'), path.join(store, DEFAULT_FILE));
    fs.writeFileSync(path.join(store, 'other.gguf.part'), 'x');
    const listed = q36(['models'], cwd, { HOME: home });
    expect(listed.stdout).toMatch(new RegExp(` +\\d+\\.\\d\\d GiB  ${DEFAULT_FILE.replace(/[.]/g, '\\.')}  \\(q2-imatrix\\)  \\[default\\]`));
    expect(listed.stdout).toMatch(/other\.gguf\.part  \[unfinished download: q36 download resumes it\]/);
    const ran = q36(['--cpu', '-p', 'hi', '-n', '2', '--temp', '0'], cwd, { HOME: home });
    expect(ran.status, ran.stderr).toBe(0);
    expect(ran.stderr).toMatch(/generated 2 tokens/);
    // Q36_MODEL names a file outright
    const named = q36(['--cpu', '-p', 'hi', '-n', '1'], cwd, { HOME: tmpDir(), Q36_MODEL: fixture('tinyA/tinyA-q2.gguf') });
    expect(named.status, named.stderr).toBe(0);
    expect(q36(['models', 'extra'], cwd, { HOME: home }).status).toBe(2);
  });
});
