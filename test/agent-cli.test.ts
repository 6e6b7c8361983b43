/**
 * q36-agent as a user runs it: the interactive agent through a pty (commands, a turn, /save and
 * /list, an unknown command, /quit), the one-shot mode's exit status and bad flags.
 */
import { spawnSync } from 'node:child_process';
import * as fs from 'node:fs';
import * as path from 'node:path';
import { describe, expect, it } from 'vitest';
import { driveQ36, fixture, tmpDir } from './helpers.js';

const ROOT = path.resolve(__dirname, '..');
const model = fixture('tinyA/tinyA-q2.gguf');
const agentCli = (args: string[], cwd: string) => spawnSync(process.execPath, [path.join(ROOT, 'dist/ts/cli/q36-agent.js'), ...args], { encoding: 'utf8', cwd, timeout: 120_000 });

describe('q36-agent', () => {
  it('interactive: /help, /list, a turn, /nothink, /save, /list with the session, unknown commands, /quit', () => {
    const ws = tmpDir('q36-agent-cli-'), sessions = path.join(tmpDir(), 'sessions');
    fs.writeFileSync(path.join(ws, 'f.txt'), 'x\n');
    const out = driveQ36([
      { expect: 'agent> ', timeout: 60 },
      { send: '/help\r' }, { expect: '/switch ID', timeout: 10 },
      { send: '/list\r' }, { expect: 'no saved sessions', timeout: 10 },
      { send: 'hello there\r' }, { expect: '\\[[^\\]]* · ctx \\d+/\\d+\\]', timeout: 120 }, { expect: 'agent> ', timeout: 10 },
      // /nothink keeps the session: it is still the one /save writes
      { send: '/nothink\r' }, { expect: 'thinking off', timeout: 10 },
      { send: '/save\r' }, { expect: 'saved session [0-9a-f]{12}: hello there', timeout: 20 },
      { send: '/list\r' }, { expect: '[0-9a-f]{12} .* kv +hello there', timeout: 10 },
      { send: '/switch zz\r' }, { expect: 'not a session id', timeout: 10 },
      { send: '/bogus\r' }, { expect: 'unknown command /bogus', timeout: 10 },
      { send: '/quit\r' }, { sleep: 4 },
    ], ['-m', model, '--cpu', '--tokens', '32', '--sessions-dir', sessions, '--chdir', ws], 200_000, 'q36-agent');
    expect(out.ok, out.transcript.slice(-1500)).toBe(true);
    expect(out.exit).toBe(0);
    const files = fs.readdirSync(sessions);
    expect(files.filter((f) => f.endsWith('.json')).length).toBe(1);
    expect(files.filter((f) => f.endsWith('.kvc')).length).toBe(1);
  }, 220_000);

  it('--non-interactive: runs to the end and exits 0/1 by whether there is a final answer; bad flags', () => {
    const ws = tmpDir('q36-agent-cli-');
    const r = agentCli(['-m', model, '--cpu', '--non-interactive', '-p', 'hi', '--tokens', '32', '--temp', '0', '--sessions-dir', path.join(ws, 's')], ws);
    // tinyA's random weights think past 32 tokens (greedy: the same every run): no final answer,
    // exit 1, and stderr says why
    // (#48 item 4: it used to print an empty line and nothing on stderr)
    expect(r.status).toBe(1);
    expect(r.stderr).toMatch(/\[the answer budget of 32 tokens ran out while thinking, before any answer: raise --tokens, or --nothink\]/);
    expect(r.stdout).toBe('');
    // the work shows on stderr while it runs: the 32 tokens of thinking come before the reason
    expect(r.stderr.split('[the answer budget')[0].trim().length).toBeGreaterThan(10);
    expect(r.stderr).not.toMatch(/TypeError|RangeError|at .*\.js:\d+/);
    expect(agentCli(['--non-interactive', '-m', model, '--cpu'], ws).stderr).toMatch(/--non-interactive needs -p/);
    const bad = agentCli(['-m', model, '--cpu', '--chdir', '/nonexistent/dir', '--non-interactive', '-p', 'x'], ws);
    expect(bad.status).toBe(2);
    expect(bad.stderr).toMatch(/--chdir \/nonexistent\/dir: no such directory/);
  }, 200_000);
});
