/**
 * The agent's tools on real files in a temporary workspace, error paths included: missing files,
 * ambiguous and missing edits, output caps, timeouts, refusals outside the workspace (symlinks
 * too), background processes, offline fetches.
 */
import * as fs from 'node:fs';
import * as http from 'node:http';
import { execFileSync } from 'node:child_process';
import { isLocalAddress } from '../ts/agent/web-fetch.js';
import * as path from 'node:path';
import { beforeEach, describe, expect, it } from 'vitest';
import { DEFAULT_LIMITS, Processes, globRegex, makeTools, runTool } from '../ts/agent/tools.js';
import { Workspace } from '../ts/agent/workspace.js';
import { tmpDir } from './helpers.js';

let root: string, asked: string[], ws: Workspace, allow: boolean;
const procs = new Processes();
const tools = makeTools(procs);
const run = (name: string, args: Record<string, unknown>, limits = DEFAULT_LIMITS) => runTool(tools, name, args, { ws, limits });

beforeEach(() => {
  root = tmpDir('q36-agent-ws-');
  asked = [];
  allow = false;
  ws = new Workspace({ root, confirm: async (w) => { asked.push(w); return allow; } });
  fs.writeFileSync(path.join(root, 'a.txt'), 'one\ntwo\nthree\n');
  fs.mkdirSync(path.join(root, 'src/deep'), { recursive: true });
  fs.writeFileSync(path.join(root, 'src/x.ts'), 'const x = 1;\nconst y = x + 1;\n');
  fs.writeFileSync(path.join(root, 'src/deep/z.ts'), 'export const z = "x";\n');
});

describe('files', () => {
  it('read_file: numbered lines, ranges, errors', async () => {
    expect((await run('read_file', { path: 'a.txt' })).text).toBe('1\tone\n2\ttwo\n3\tthree');
    expect((await run('read_file', { path: 'a.txt', offset: 2, limit: 1 })).text).toBe('2\ttwo\n[… 1 more lines: read with offset 3]');
    expect(await run('read_file', { path: 'nope.txt' })).toEqual({ ok: false, text: 'error: nope.txt: no such file or directory' });
    expect((await run('read_file', { path: 'src' })).text).toMatch(/src: is a directory/);
    expect((await run('read_file', { path: 'a.txt', offset: 0 })).text).toMatch(/offset must be an integer ≥ 1/);
    expect((await run('read_file', { path: 'a.txt', offset: 99 })).text).toMatch(/has 3 lines; offset 99 is past the end/);
  });
  it('write_file creates parents; edit_file replaces a unique match, refuses missing and ambiguous ones', async () => {
    expect((await run('write_file', { path: 'new/dir/f.txt', content: 'hello hello' })).ok).toBe(true);
    expect(fs.readFileSync(path.join(root, 'new/dir/f.txt'), 'utf8')).toBe('hello hello');
    expect((await run('edit_file', { path: 'new/dir/f.txt', old_text: 'hello', new_text: 'bye' })).text).toMatch(/occurs 2 times.*replace_all/);
    expect((await run('edit_file', { path: 'new/dir/f.txt', old_text: 'absent', new_text: 'x' })).text).toMatch(/was not found/);
    expect((await run('edit_file', { path: 'new/dir/f.txt', old_text: 'hello', new_text: 'bye', replace_all: true })).text).toMatch(/replaced 2/);
    expect(fs.readFileSync(path.join(root, 'new/dir/f.txt'), 'utf8')).toBe('bye bye');
    // "$&" in the replacement is literal text, not a regex backreference
    await run('edit_file', { path: 'a.txt', old_text: 'two', new_text: '$&$&' });
    expect(fs.readFileSync(path.join(root, 'a.txt'), 'utf8')).toBe('one\n$&$&\nthree\n');
    expect((await run('edit_file', { path: 'missing.txt', old_text: 'a', new_text: 'b' })).text).toMatch(/no such file/);
  });
  it('list_files and search, with globs', async () => {
    expect((await run('list_files', {})).text.split('\n')).toEqual(['a.txt', 'src/deep/z.ts', 'src/x.ts']);
    expect((await run('list_files', { glob: '**/*.ts' })).text.split('\n')).toEqual(['src/deep/z.ts', 'src/x.ts']);
    expect((await run('list_files', { path: 'a.txt' })).text).toMatch(/not a directory/);
    expect((await run('search', { pattern: 'const \\w' })).text.split('\n')).toEqual(['src/deep/z.ts:1:export const z = "x";', 'src/x.ts:1:const x = 1;', 'src/x.ts:2:const y = x + 1;']);
    expect((await run('search', { pattern: 'x', glob: '*.txt' })).text).toBe('(no matches)');
    expect((await run('search', { pattern: '(' })).text).toMatch(/pattern: Invalid regular expression/);
    expect(globRegex('src/**/*.ts').test('src/deep/z.ts')).toBe(true);
    expect(globRegex('*.ts').test('src/x.ts')).toBe(false);
  });
});

describe('the workspace boundary', () => {
  it('outside paths ask first; refused unless confirmed; symlinks are followed to where they lead', async () => {
    const outside = tmpDir('q36-outside-');
    fs.writeFileSync(path.join(outside, 'secret'), 'data');
    expect((await run('read_file', { path: path.join(outside, 'secret') })).text).toMatch(/outside the workspace .* was not confirmed/);
    expect(asked.length).toBe(1);
    fs.symlinkSync(outside, path.join(root, 'link'));
    expect((await run('read_file', { path: 'link/secret' })).text).toMatch(/outside the workspace/);
    expect((await run('write_file', { path: 'link/new', content: 'x' })).text).toMatch(/outside the workspace/);
    expect(fs.existsSync(path.join(outside, 'new'))).toBe(false);
    expect((await run('read_file', { path: '../' + path.basename(outside) + '/secret' })).ok).toBe(false);
    allow = true;
    expect((await run('read_file', { path: 'link/secret' })).text).toMatch(/data/);
    const yes = new Workspace({ root, yes: true, confirm: async () => { throw new Error('not asked with --yes'); } });
    expect((await runTool(tools, 'read_file', { path: 'link/secret' }, { ws: yes, limits: DEFAULT_LIMITS })).ok).toBe(true);
  });
});

describe('search runs its pattern off the agent\'s thread (#45 item 12)', () => {
  it('a catastrophically backtracking pattern is stopped after the timeout, and the agent goes on', async () => {
    fs.writeFileSync(path.join(root, 'evil.txt'), `${'a'.repeat(40)}b\n`);
    const t0 = Date.now();
    const r = await run('search', { pattern: '(a+)+$', path: 'evil.txt' }, { ...DEFAULT_LIMITS, shellTimeoutS: 1 });
    expect(r.ok).toBe(false);
    expect(r.text).toMatch(/search stopped after 1 s/);
    expect(Date.now() - t0).toBeLessThan(10_000);
    expect((await run('search', { pattern: 'const x' })).text).toMatch(/src\/x\.ts:1:const x = 1;/);
  });
});

describe('read_file reads regular files only (#45 item 12)', () => {
  it('a FIFO is refused at once instead of blocking the agent', async () => {
    execFileSync('mkfifo', [path.join(root, 'pipe')]);
    const t0 = Date.now();
    const r = await run('read_file', { path: 'pipe' });
    expect(r.ok).toBe(false);
    expect(r.text).toMatch(/pipe: not a regular file \(a FIFO\): not read/);
    expect(Date.now() - t0).toBeLessThan(5000);
  });
});

describe('the workspace boundary through links that lead nowhere yet (#45 item 4)', () => {
  it('write_file through a dangling link to outside is refused unless confirmed; the target is not created', async () => {
    const outside = tmpDir('q36-outside-');
    fs.symlinkSync(path.join(outside, 'x'), path.join(root, 'dangling'));
    expect((await run('write_file', { path: 'dangling', content: 'pwned' })).text).toMatch(/outside the workspace/);
    expect(fs.existsSync(path.join(outside, 'x'))).toBe(false);
    // a link to a folder outside, then a missing file under it; `..` after a link climbs from its target
    fs.symlinkSync(outside, path.join(root, 'out'));
    expect((await run('write_file', { path: 'out/sub/new.txt', content: 'x' })).text).toMatch(/outside the workspace/);
    fs.mkdirSync(path.join(root, 'in'), { recursive: true });
    fs.symlinkSync(path.join(outside), path.join(root, 'in', 'hop'));
    expect((await run('write_file', { path: 'in/hop/../escape.txt', content: 'x' })).text).toMatch(/outside the workspace/);
    expect(fs.existsSync(path.join(path.dirname(outside), 'escape.txt'))).toBe(false);
    // a dangling link inside the workspace stays inside
    fs.symlinkSync(path.join(root, 'made-later.txt'), path.join(root, 'inner'));
    expect((await run('write_file', { path: 'inner', content: 'ok' })).ok).toBe(true);
    expect(fs.readFileSync(path.join(root, 'made-later.txt'), 'utf8')).toBe('ok');
  });
});

describe('commands', () => {
  it('run_shell asks, then reports exit codes and output, caps it, kills on timeout', async () => {
    expect((await run('run_shell', { command: 'echo hi' })).text).toMatch(/did not allow/);
    allow = true;
    expect((await run('run_shell', { command: 'echo hi; exit 3' })).text).toBe('[exit code 3]\nhi\n');
    expect((await run('run_shell', { command: 'pwd' })).text).toContain(fs.realpathSync(root));
    const capped = await run('run_shell', { command: 'yes x | head -c 5000' }, { ...DEFAULT_LIMITS, outputChars: 100 });
    expect(capped.text).toMatch(/more characters cut: output cap 100/);
    const t0 = Date.now();
    expect((await run('run_shell', { command: 'sleep 30', timeout_s: 1 })).text).toMatch(/^\[timed out after 1 s\]/);
    expect(Date.now() - t0).toBeLessThan(10_000);
  });
  it('background processes: start, read, stop; unknown ids', async () => {
    allow = true;
    const id = Number(/started process (\d+)/.exec((await run('process_start', { command: 'echo ready; sleep 30' })).text)![1]);
    await new Promise((r) => setTimeout(r, 300));
    expect((await run('process_read', { id })).text).toMatch(/running\]\nready/);
    expect((await run('process_stop', { id })).text).toMatch(/stopped process/);
    expect((await run('process_read', { id: 999 })).text).toMatch(/no background process 999/);
    procs.stopAll();
  });
  it('web_fetch fails clearly offline; bad urls; unknown tools', async () => {
    expect((await run('web_fetch', { url: 'ftp://x' })).text).toMatch(/must start with http/);
    allow = true;
    expect((await run('web_fetch', { url: 'http://127.0.0.1:9/' })).text).toMatch(/could not fetch .*offline/);
    expect((await run('rm_rf', {})).text).toMatch(/no tool named "rm_rf"/);
  });
  it('web_fetch asks before reaching this machine or a private network, at every redirect; caps the body (#45 item 7)', async () => {
    const big = 50 << 20;
    const srv = http.createServer((req, res) => {
      if (req.url === '/hop') { res.writeHead(302, { location: '/page' }); res.end(); return; }
      if (req.url === '/big') { res.writeHead(200); const chunk = Buffer.alloc(1 << 20, 97); let sent = 0; const more = () => { while (sent < big) { sent += chunk.length; if (!res.write(chunk)) { res.once('drain', more); return; } } res.end(); }; more(); return; }
      res.end('hello from the page');
    });
    await new Promise<void>((r) => srv.listen(0, '127.0.0.1', () => r()));
    const port = (srv.address() as { port: number }).port;
    try {
      for (const host of ['127.0.0.1', 'localhost', '0x7f000001', '[::ffff:127.0.0.1]']) {
        asked.length = 0;
        expect((await run('web_fetch', { url: `http://${host}:${port}/` })).text, host).toMatch(/local or private address .* not confirmed/);
        expect(asked.length, host).toBe(1);
      }
      allow = true;
      asked.length = 0;
      const r = await run('web_fetch', { url: `http://127.0.0.1:${port}/hop` });
      expect(r.text).toMatch(/\[HTTP 200\] \(from http:\/\/127\.0\.0\.1:\d+\/page\)\nhello from the page/);
      expect(asked.length).toBe(2); // the URL and the redirect, each asked
      const before = process.memoryUsage().rss;
      const b = await run('web_fetch', { url: `http://127.0.0.1:${port}/big` }, { ...DEFAULT_LIMITS, outputChars: 1000 });
      expect(b.text.length).toBeLessThan(2000);
      expect(process.memoryUsage().rss - before).toBeLessThan(200 << 20);
      expect(isLocalAddress('10.1.2.3') && isLocalAddress('192.168.0.1') && isLocalAddress('172.20.0.1') && isLocalAddress('169.254.1.1') && isLocalAddress('fd00::1') && isLocalAddress('::1')).toBe(true);
      expect(isLocalAddress('93.184.216.34') || isLocalAddress('2606:2800:220:1::1')).toBe(false);
    } finally {
      srv.closeAllConnections();
      srv.close();
    }
  });
});

describe('the agent on SIGTERM / SIGHUP (#45 item 12)', () => {
  // a process holding background processes as q36-agent does (the same Processes and the same
  // signal handling, from the build), signalled as a supervisor or a closed terminal would
  const DIST = path.resolve(__dirname, '..', 'dist', 'ts', 'agent');
  const holder = `import { Processes } from ${JSON.stringify(path.join(DIST, 'tools.js'))};
import { exitWithAgentOnSignals } from ${JSON.stringify(path.join(DIST, 'signals.js'))};
const procs = new Processes();
procs.start('sleep 300', process.cwd());
exitWithAgentOnSignals(() => procs.stopAll());
console.log([...procs.procs.values()][0].p.pid);
setInterval(() => {}, 1000);`;
  // any process of the group alive, zombies aside (a killed orphan waits for an init that may never reap it: in
  // containers PID 1 is often not a reaping init)
  const alive = (pgid: number) => fs.readdirSync('/proc').filter((d) => /^\d+$/.test(d)).some((d) => {
    let st: string;
    try { st = fs.readFileSync(`/proc/${d}/stat`, 'utf8'); } catch { return false; }
    const f = st.slice(st.lastIndexOf(')') + 2).split(' ');  // state, ppid, pgrp, …
    return f[0] !== 'Z' && Number(f[2]) === pgid;
  });
  it.each([['SIGTERM', 143], ['SIGHUP', 129]] as const)('%s: the background processes go with it (exit %i)', async (sig, code) => {
    const { spawn } = await import('node:child_process');
    const p = spawn(process.execPath, ['--input-type=module', '-e', holder], { stdio: ['ignore', 'pipe', 'inherit'] });
    const pgid = await new Promise<number>((resolve) => p.stdout!.once('data', (d) => resolve(Number(String(d).trim()))));
    expect(alive(pgid)).toBe(true);
    const exited = new Promise<number | null>((resolve) => p.once('exit', (c) => resolve(c)));
    p.kill(sig);
    expect(await exited).toBe(code);
    for (let i = 0; i < 50 && alive(pgid); i++) await new Promise((r) => setTimeout(r, 20));
    expect(alive(pgid)).toBe(false);
  });
});
