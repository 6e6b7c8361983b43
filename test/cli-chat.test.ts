import { describe, expect, it } from 'vitest';
import { Conversation } from '../ts/chat/conversation.js';
import { renderChat } from '../ts/chat/render.js';
import { driveQ36 as drive, fixture } from './helpers.js';

describe('the conversation the CLI and WebSocket chats share renders what the session holds', () => {
  it('prompt + answer is a byte prefix of the next prompt (preserved thinking), with thinking on and off', () => {
    const answer = 'reasoning here\n</think>\n\nThe answer.';
    const c = new Conversation();
    c.addUser('Hi');
    const p1 = c.render({ think: true });
    expect(p1).toBe(renderChat([{ role: 'user', content: 'Hi' }]));
    c.addAnswer({ prompt: p1, raw: answer, think: true, reasoning: 'reasoning here' });
    c.addUser('And then?');
    const p2 = c.render({ think: true });
    expect(p2.startsWith(p1 + answer)).toBe(true);
    expect(p2).toBe(renderChat([{ role: 'user', content: 'Hi' }, { role: 'assistant', content: '<think>\n' + answer }, { role: 'user', content: 'And then?' }], { preserveThinking: true }));
    // an answer a re-render would not reproduce (unclosed think block) still enters as sampled
    const odd = new Conversation();
    odd.addUser('Hi');
    const r1 = odd.render({ think: true });
    odd.addAnswer({ prompt: r1, raw: 'cut off mid-thought', think: true, reasoning: 'cut off mid-thought' });
    odd.addUser('Go on');
    expect(odd.render({ think: true })).toBe(r1 + 'cut off mid-thought<|im_end|>\n<|im_start|>user\nGo on<|im_end|>\n<|im_start|>assistant\n<think>\n');
    // tool results group into one user turn, as the template does
    odd.addAnswer({ prompt: odd.render({ think: true }), raw: 'x</think>\n\n<tool_call>\n<function=f>\n</function>\n</tool_call>', think: true, reasoning: 'x' });
    odd.addToolResult('one');
    odd.addToolResult('two');
    expect(odd.render({ think: true }).endsWith('</tool_call><|im_end|>\n<|im_start|>user\n<tool_response>\none\n</tool_response>\n<tool_response>\ntwo\n</tool_response><|im_end|>\n<|im_start|>assistant\n<think>\n')).toBe(true);
    const off = new Conversation('Be brief.');
    off.addUser('Hi');
    const q1 = off.render({ think: false });
    off.addAnswer({ prompt: q1, raw: 'A.', think: false, reasoning: '' });
    off.addUser('Q2');
    const q2 = off.render({ think: false });
    expect(q2.startsWith(q1 + 'A.')).toBe(true);
    expect(q2.endsWith('<|im_start|>user\nQ2<|im_end|>\n<|im_start|>assistant\n<think>\n\n</think>\n\n')).toBe(true);
    off.truncate(1);
    expect(off.messages).toEqual([{ role: 'system', content: 'Be brief.' }]);
  });
});

describe('q36 interactive chat in a terminal', () => {
  it('two turns reuse the live state; /nothink, /ctx and /think work; /quit exits', () => {
    const r = drive([
      { expect: 'q36> ', timeout: 60 },
      { send: 'Hello there\r' },
      { expect: 'prefill (\\d+) new tokens \\(0 reused\\).*?ctx (\\d+)/', timeout: 60 },
      { expect: 'q36> ' },
      { send: 'Second question\r' },
      { expect: 'prefill \\d+ new tokens \\((\\d+) reused\\)', timeout: 60 },
      { expect: 'q36> ' },
      { send: '/nothink\r' },
      { expect: 'thinking off' },
      { send: 'Third\r' },
      { expect: 'reused\\)', timeout: 60 },
      { expect: 'q36> ' },
      { send: '/ctx 1024\r' },
      { expect: 'context is now 1024 tokens', timeout: 60 },
      { send: '/think\r' },
      { expect: 'thinking on' },
      { send: 'Still here?\r' },
      { expect: 'reused\\)', timeout: 60 },
      { expect: 'q36> ' },
      { send: '/quit\r' },
    ], ['--cpu', '-m', fixture('tinyA/tinyA-q2.gguf'), '-n', '12', '--seed', '1', '--ctx', '512']);
    if (!r.ok) console.log(r.transcript);
    expect(r.ok, `failed at step ${r.failed_step}`).toBe(true);
    expect(r.exit).toBe(0);
    const t = r.transcript;
    // turn 1 ends at ctx N; turn 2 reuses all N tokens (nothing of turn 1 is prefilled again)
    const first = /prefill (\d+) new tokens \(0 reused\).*?ctx (\d+)\//s.exec(t)!;
    const second = /prefill (\d+) new tokens \((\d+) reused\)/g;
    second.lastIndex = first.index + first[0].length;
    const m2 = second.exec(t)!;
    expect(Number(m2[2])).toBe(Number(first[2]));
  }, 180_000);

  it('Ctrl+C stops a long generation and the chat continues on the same session', () => {
    const r = drive([
      { expect: 'q36> ', timeout: 60 },
      { send: '/think-max\r' },
      { expect: 'budget: the free context' },
      { send: 'Now a long answer please\r' },
      { expect: '\\x1b\\[2m', timeout: 30 }, // reasoning tokens (dim) are streaming: generation is under way
      { sigint: true },
      { expect: '\\(interrupted\\)', timeout: 30 },
      { expect: 'q36> ' },
      { send: 'Still here?\r' },
      { expect: 'prefill \\d+ new tokens \\([1-9]\\d* reused\\)', timeout: 60 },
      { expect: 'q36> ' },
      { send: '/quit\r' },
    ], ['--cpu', '-m', fixture('tinyA/tinyA-q2.gguf'), '-n', '12', '--ctx', '512']);
    if (!r.ok) console.log(r.transcript.slice(-2000));
    expect(r.ok, `failed at step ${r.failed_step}`).toBe(true);
    expect(r.exit).toBe(0);
  }, 120_000);

  it('Ctrl+C twice at the prompt exits', () => {
    const r = drive([
      { expect: 'q36> ', timeout: 60 },
      { sigint: true },
      { expect: 'press Ctrl\\+C again' },
      { sigint: true },
    ], ['--cpu', '-m', fixture('tinyA/tinyA-q2.gguf'), '--ctx', '256']);
    expect(r.ok).toBe(true);
    expect(r.exit).toBe(0);
  });
});
