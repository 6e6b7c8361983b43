/**
 * The disk KV cache against what a hostile or broken folder holds (#45 items 5, 6, 9, 16): planted
 * symlinks at temp names, `*.kv` symlinks out of the folder, FIFOs, read-only folders and files, a
 * disk that takes fewer bytes than written. Each case failed on the code before safe-file.ts:
 * followed the link and overwrote its target, loaded and rewrote a file outside the folder,
 * blocked the thread forever, answered every request with an error, or logged a truncated save as
 * complete.
 */
import { execFileSync, spawn } from 'node:child_process';
import * as fs from 'node:fs';
import fsModule from 'node:fs';
import { syncBuiltinESMExports } from 'node:module';
import * as path from 'node:path';
import { describe, expect, it, vi } from 'vitest';
import { DiskCache } from '../ts/server/kv-disk/disk-cache.js';
import { createTemp, openRegular, readRegular, writeAll } from '../ts/safe-file.js';
import { kv, writeGguf } from '../ts/gguf/index.js';
import { SessionStore } from '../ts/agent/sessions.js';
import { addUsage } from '../ts/engine/expert-usage.js';
import { tmpDir } from './helpers.js';

const ROOT = path.resolve(__dirname, '..');
const MODEL = { fingerprint: Buffer.alloc(32, 0x5a), expertBits: 2 };
const save = (c: DiskCache, text: string) => c.save({ reason: 'cold', text, payload: new Uint8Array(100).fill(7), tokens: 4, ctx: 64 });

describe('safe-file', () => {
  it('createTemp makes a fresh file under an unpredictable name, never through a link', () => {
    const dir = tmpDir(), target = path.join(dir, 'victim');
    fs.writeFileSync(target, 'keep me');
    const final = path.join(dir, 'out.kv');
    const a = createTemp(final), b = createTemp(final);
    expect(a.tmp).not.toBe(b.tmp);
    expect(path.basename(a.tmp)).toMatch(/^out\.kv\.[0-9a-f]{16}\.tmp$/);
    fs.closeSync(a.fd); fs.closeSync(b.fd);
    // an existing name (a planted link) is never opened
    const planted = path.join(dir, 'planted.tmp');
    fs.symlinkSync(target, planted);
    expect(() => fs.openSync(planted, fs.constants.O_WRONLY | fs.constants.O_CREAT | fs.constants.O_EXCL | fs.constants.O_NOFOLLOW)).toThrow(/EEXIST/);
    expect(fs.readFileSync(target, 'utf8')).toBe('keep me');
  });
  it('openRegular refuses links, FIFOs and folders at once, by kind', () => {
    const dir = tmpDir();
    fs.writeFileSync(path.join(dir, 'f'), 'x');
    fs.symlinkSync(path.join(dir, 'f'), path.join(dir, 'link'));
    execFileSync('mkfifo', [path.join(dir, 'fifo')]);
    expect(readRegular(path.join(dir, 'f')).toString()).toBe('x');
    expect(() => openRegular(path.join(dir, 'link'))).toThrow(/ELOOP/);
    expect(() => openRegular(path.join(dir, 'fifo'))).toThrow(/not a regular file \(a FIFO\)/);
    expect(() => openRegular(dir)).toThrow(/EISDIR|not a regular file \(a directory\)/);
  });
  it('writeAll fails on a full disk instead of leaving a short file called complete', () => {
    if (!fs.existsSync('/dev/full')) return expect.fail('no /dev/full on this machine');
    const fd = fs.openSync('/dev/full', 'w');
    try {
      expect(() => writeAll(fd, new Uint8Array(4096))).toThrow(/ENOSPC/);
    } finally {
      fs.closeSync(fd);
    }
  });
});

describe('the other writers that used a predictable temp name (q36-quantize and make-model through writeGguf, the agent\'s session store, expert usage)', () => {
  it('a symlink planted at OUT.tmp leaves its target intact; the output is written', () => {
    const dir = tmpDir(), outside = tmpDir(), victim = path.join(outside, 'victim');
    fs.writeFileSync(victim, 'precious');
    const out = path.join(dir, 'm.gguf');
    fs.symlinkSync(victim, `${out}.tmp`);
    writeGguf(out, { metadata: [['general.architecture', kv.str('llama')]], tensors: [], fill: () => [] });
    expect(fs.readFileSync(victim, 'utf8')).toBe('precious');
    expect(fs.readFileSync(out).subarray(0, 4).toString('latin1')).toBe('GGUF');
  });
  it('symlinks planted at the session store\'s and expert-usage\'s old temp names are not followed', () => {
    const dir = tmpDir(), outside = tmpDir(), victim = path.join(outside, 'victim');
    fs.writeFileSync(victim, 'precious');
    const store = new SessionStore(dir);
    fs.symlinkSync(victim, path.join(dir, `abc.json.tmp-${process.pid}`));
    store.save({ id: 'abc', title: 't', created: 1, updated: 1, messages: [] } as never);
    const usage = path.join(dir, 'usage.json');
    fs.symlinkSync(victim, `${usage}.${process.pid}.tmp`);
    addUsage(usage, 'm', 1, 2, [1, 2]);
    expect(fs.readFileSync(victim, 'utf8')).toBe('precious');
    expect(JSON.parse(fs.readFileSync(path.join(dir, 'abc.json'), 'utf8')).id).toBe('abc');
    expect(JSON.parse(fs.readFileSync(usage, 'utf8')).counts).toEqual([1, 2]);
  });
});

describe('crafted cache files cannot fill memory (#45 item 11)', () => {
  it('a small file claiming a 400 MB text, and a sparse file, are skipped by name without reading the text', () => {
    const dir = tmpDir(), logs: string[] = [];
    const c = new DiskCache({ dir, budgetBytes: 1 << 40, model: MODEL, log: (m) => logs.push(m) });
    const real = save(c, 'an honest prefix');
    const head = fs.readFileSync(real).subarray(0, 84);
    // the text length field says 400 MB; the file itself is a sparse 400 MB file of zeros after the header
    const crafted = Buffer.from(head);
    crafted.writeUInt32LE(400 << 20, 80);
    const f1 = path.join(dir, `${'c'.repeat(40)}.kv`);
    fs.writeFileSync(f1, crafted);
    fs.truncateSync(f1, (400 << 20) + 200);
    const before = process.memoryUsage().rss;
    expect(c.lookup('an honest prefix and more')?.text).toBe('an honest prefix');
    expect(process.memoryUsage().rss - before).toBeLessThan(100 << 20);
    expect(logs.join('\n')).toMatch(/sparse .*not a file this server wrote/);
    // not sparse, but its claimed text is far beyond its token count
    const f2 = path.join(dir, `${'d'.repeat(40)}.kv`);
    const small = Buffer.concat([crafted, Buffer.alloc(9000)]);
    small.writeUInt32LE(8000, 80);
    fs.writeFileSync(f2, small);
    c.lookup('x');
    expect(logs.join('\n')).toMatch(/a 8000-byte text for 4 tokens .*not a file this server wrote/);
  });
});

describe('tool-id lookups (#45 item 10)', () => {
  it('an unknown tool-call id reads no cache file; a known one reads only the file that holds it', () => {
    const dir = tmpDir();
    const c = new DiskCache({ dir, budgetBytes: 1 << 30, model: MODEL });
    for (let i = 0; i < 20; i++) c.save({ reason: 'cold', text: `conversation ${i}`, payload: new Uint8Array(200_000).fill(i), tokens: 4, ctx: 64, tools: new Map([[`call_${i}`, `<tool_call>${i}</tool_call>`]]) });
    c.lookup('warm the index');
    const spy = vi.spyOn(fsModule, 'readFileSync');
    syncBuiltinESMExports();
    try {
      expect(c.findTools(['call_unknown']).size).toBe(0);
      expect(spy.mock.calls.length).toBe(0);
      expect(c.findTools(['call_7', 'call_unknown'])).toEqual(new Map([['call_7', '<tool_call>7</tool_call>']]));
      expect(spy.mock.calls.length).toBe(1);
    } finally {
      spy.mockRestore();
      syncBuiltinESMExports();
    }
  });
});

describe('disk KV cache in a hostile folder', () => {
  it('a symlink planted at the old predictable temp name is not followed: its target stays intact', () => {
    const dir = tmpDir(), outside = tmpDir();
    const victim = path.join(outside, 'victim.txt');
    fs.writeFileSync(victim, 'precious');
    const c = new DiskCache({ dir, budgetBytes: 1 << 30, model: MODEL });
    const final = path.join(dir, DiskCache.nameFor('hello'));
    fs.symlinkSync(victim, `${final}.${process.pid}.tmp`);
    save(c, 'hello');
    expect(fs.readFileSync(victim, 'utf8')).toBe('precious');
    expect(c.lookup('hello world')?.text).toBe('hello');
  });
  it('a *.kv symlink to a valid cache file outside the folder is neither loaded nor rewritten', () => {
    const outside = tmpDir(), dir = tmpDir();
    const c0 = new DiskCache({ dir: outside, budgetBytes: 1 << 30, model: MODEL });
    const real = save(c0, 'secret prefix');
    const before = fs.readFileSync(real);
    fs.symlinkSync(real, path.join(dir, DiskCache.nameFor('secret prefix')));
    const logs: string[] = [];
    const c = new DiskCache({ dir, budgetBytes: 1 << 30, model: MODEL, log: (m) => logs.push(m) });
    expect(c.lookup('secret prefix and more')).toBeUndefined();
    expect(c.load(path.join(dir, DiskCache.nameFor('secret prefix')))).toBeUndefined();
    expect(fs.readFileSync(real)).toEqual(before); // counters not rewritten
    expect(logs.join('\n')).toMatch(/not a regular file \(a symbolic link\)/);
  });
  it('a FIFO named *.kv does not block the process (a child would hang before)', async () => {
    const dir = tmpDir();
    execFileSync('mkfifo', [path.join(dir, `${'a'.repeat(40)}.kv`)]);
    const script = path.join(tmpDir(), 'fifo.mjs');
    fs.writeFileSync(script, `import { DiskCache } from '${path.join(ROOT, 'dist/ts/server/kv-disk/disk-cache.js')}';
const c = new DiskCache({ dir: ${JSON.stringify(dir)}, budgetBytes: 1 << 30, model: { fingerprint: Buffer.alloc(32, 0x5a), expertBits: 2 }, log: (m) => console.log(m) });
console.log('lookup', String(c.lookup('anything')));
c.save({ reason: 'cold', text: 'x', payload: new Uint8Array(8), tokens: 1, ctx: 8 });
console.log('saved');`);
    const child = spawn(process.execPath, [script]);
    let out = '';
    child.stdout.on('data', (d) => (out += d));
    const code = await new Promise<number | null>((resolve) => {
      const t = setTimeout(() => { child.kill('SIGKILL'); resolve(null); }, 10_000);
      child.on('exit', (c) => { clearTimeout(t); resolve(c); });
    });
    expect(code, `hung; output so far: ${out}`).toBe(0);
    expect(out).toMatch(/not a regular file \(a FIFO\)/);
    expect(out).toMatch(/lookup undefined/);
    expect(out).toMatch(/saved/);
  });
  it('a read-only file still loads (its counters stay), a corrupt one that cannot be deleted is skipped, a save is refused: no error escapes', () => {
    const dir = tmpDir();
    const c = new DiskCache({ dir, budgetBytes: 1 << 30, model: MODEL });
    const file = save(c, 'read only text');
    fs.writeFileSync(path.join(dir, `${'b'.repeat(40)}.kv`), Buffer.concat([fs.readFileSync(file).subarray(0, 60), Buffer.alloc(10)]));
    fs.chmodSync(file, 0o444);
    fs.chmodSync(dir, 0o555);
    const script = path.join(tmpDir(), 'ro.mjs');
    fs.writeFileSync(script, `import { DiskCache } from '${path.join(ROOT, 'dist/ts/server/kv-disk/disk-cache.js')}';
const c = new DiskCache({ dir: ${JSON.stringify(dir)}, budgetBytes: 1 << 30, model: { fingerprint: Buffer.alloc(32, 0x5a), expertBits: 2 }, log: (m) => console.log(m) });
const e = c.lookup('read only text and more');
console.log('found', e && e.text);
console.log('loaded', !!c.load(e.file));
try { c.save({ reason: 'cold', text: 'new', payload: new Uint8Array(8), tokens: 1, ctx: 8 }); } catch (err) { console.log('save refused', err.code); }`);
    // root passes permission checks: run the child as root without the capabilities that do that
    const [cmd, args] = process.getuid?.() === 0
      ? ['setpriv', ['--inh-caps=-all', '--ambient-caps=-all', '--bounding-set=-all', process.execPath, script]]
      : [process.execPath, [script]];
    let out = '';
    try {
      out = execFileSync(cmd, args as string[], { encoding: 'utf8', timeout: 20_000 });
    } finally {
      fs.chmodSync(dir, 0o755);
    }
    expect(out).toMatch(/found read only text/);
    expect(out).toMatch(/loaded true/);
    expect(out).toMatch(/hit counters not updated \(EACCES\)/);
    expect(out).toMatch(/corrupt, and it cannot be deleted here/);
    expect(out).toMatch(/save refused EACCES/);
  });
});
