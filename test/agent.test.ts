/**
 * The native agent end to end with tinyA on the CPU: the engine evaluates every token, while the
 * test forces what the model "samples" (AgentOptions.script), so real tool calls are parsed,
 * executed, fed back, saved, switched and resumed. Checked: the files the tools changed, the KV
 * state holding exactly the transcript (nothing re-evaluated), /switch restoring the saved state
 * with no prefill, /strip rebuilding it as a fresh prefill, damaged session files skipped.
 */
import * as fs from 'node:fs';
import * as path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { Agent } from '../ts/agent/agent.js';
import { SessionStore } from '../ts/agent/sessions.js';
import { Workspace } from '../ts/agent/workspace.js';
import { renderToolCall } from '../ts/chat/tool-call.js';
import { openEngine, type Engine } from '../ts/engine/index.js';
import { fixture, tmpDir } from './helpers.js';

let engine: Engine;
beforeAll(async () => { engine = await openEngine({ model: fixture('tinyA/tinyA-q2.gguf'), backend: 'cpu', ctx: 4096 }); });
afterAll(() => engine.dispose());

const call = (name: string, args: Record<string, unknown>, thought = 'I will use a tool.') => `${thought}\n</think>\n\n${renderToolCall(name, args)}`;
const final = (text: string) => `Done thinking.\n</think>\n\n${text}`;

function setup(script: string[], draft?: ConstructorParameters<typeof Agent>[0]['draft']) {
  const root = tmpDir('q36-agent-e2e-');
  fs.writeFileSync(path.join(root, 'notes.txt'), 'status: TODO\n');
  const warnings: string[] = [];
  const store = new SessionStore(path.join(tmpDir('q36-sessions-'), 'sessions'), (w) => warnings.push(w));
  const tools: string[] = [];
  const agent = new Agent({
    engine, workspace: new Workspace({ root, confirm: async () => false }), store, think: true, sampling: { temperature: 0 }, maxTokens: 256, script, draft,
    ui: { toolEnd: (n, ok, t) => tools.push(`${n}:${ok}:${t.split('\n')[0]}`) },
  });
  return { root, store, agent, warnings, tools };
}

describe('the agent loop', () => {
  it('tool calls are parsed, run and fed back until an answer; the KV state is exactly the transcript', async () => {
    const { root, agent, tools } = setup([
      call('read_file', { path: 'notes.txt' }),
      call('edit_file', { path: 'notes.txt', old_text: 'TODO', new_text: 'DONE' }),
      final('I marked the notes as done.'),
    ]);
    const r = await agent.send('Mark the notes as done.');
    expect(r).toEqual({ answer: 'I marked the notes as done.', steps: 2 });
    expect(tools).toEqual(['read_file:true:1\tstatus: TODO', 'edit_file:true:replaced 1 occurrence(s) in notes.txt']);
    expect(fs.readFileSync(path.join(root, 'notes.txt'), 'utf8')).toBe('status: DONE\n');
    // the session holds exactly the conversation's text, and every token was evaluated once
    const s = agent.session;
    expect(engine.tokenizer.decode(s.tokens)).toBe(agent.conv.text);
    expect(s.evaluated).toBe(s.tokens.length);
    expect(agent.conv.text).toContain('<|im_start|>user\n<tool_response>\n1\tstatus: TODO\n</tool_response><|im_end|>');
    agent.dispose();
  });

  it('with MTP drafts (q36-agent --mtp FILE): the same tool calls, answer and transcript; the head goes with the agent\'s session', async () => {
    const script = [call('read_file', { path: 'notes.txt' }), final('The notes say TODO.')];
    // (each agent takes its turns off its own copy of the script)
    const plain = setup(script.slice()), drafted = setup(script.slice(), { kind: 'mtp', max: 2, mtp: { file: fixture('mtp/tinyA-mtp-only.gguf'), margin: 0 } });
    const a = await plain.agent.send('What do the notes say?'), b = await drafted.agent.send('What do the notes say?');
    expect(b).toEqual(a);
    expect(drafted.tools).toEqual(plain.tools);
    // the transcripts differ only by the workspace's folder; each session holds exactly its transcript
    expect(drafted.agent.conv.text.replaceAll(drafted.root, 'ROOT')).toBe(plain.agent.conv.text.replaceAll(plain.root, 'ROOT'));
    expect(engine.tokenizer.decode(drafted.agent.session.tokens)).toBe(drafted.agent.conv.text);
    plain.agent.dispose();
    drafted.agent.dispose();
  });

  it('a failing tool reports its error to the model, which goes on', async () => {
    const { agent, tools } = setup([call('edit_file', { path: 'notes.txt', old_text: 'absent', new_text: 'x' }), final('The text was not there.')]);
    const r = await agent.send('Edit it.');
    expect(r.answer).toBe('The text was not there.');
    expect(tools[0]).toMatch(/^edit_file:false:error: old_text was not found/);
    expect(agent.conv.text).toContain('error: old_text was not found in notes.txt');
    agent.dispose();
  });
});

describe('saved sessions', () => {
  it('/save, /switch without prefill, /strip rebuilt by prefill, /list order, damaged files skipped', async () => {
    const { agent, store, warnings } = setup([final('First answer.'), final('Second answer.'), final('Third.')]);
    expect(agent.unsaved()).toBe(false); // nothing said yet
    await agent.send('First task');
    expect(agent.unsaved()).toBe(true);
    const saved = agent.save();
    expect(agent.unsaved()).toBe(false);
    const savedPayload = agent.session.savePayload();
    expect(store.list().map((x) => x.id)).toEqual([saved.id]);
    // go on in the same session (unsaved turns: q36-agent's /switch saves them first), then come
    // back to the saved point
    await agent.send('More');
    expect(agent.unsaved()).toBe(true);
    expect(agent.session.tokens.length).toBeGreaterThan(0);
    const before = agent.session.evaluated;
    const sw = await agent.switchTo(saved.id.slice(0, 6));
    expect(sw?.prefilled).toBe(false);
    expect(agent.unsaved()).toBe(false);
    expect(agent.session.evaluated).toBe(before); // nothing evaluated
    expect(Buffer.from(agent.session.savePayload()).equals(Buffer.from(savedPayload))).toBe(true);
    expect(agent.conv.text).toBe(saved.conversation.held);
    // a continuation after the switch prefills only its new message
    const n0 = agent.session.tokens.length, e0 = agent.session.evaluated;
    await agent.send('After switching');
    expect(agent.session.evaluated - e0).toBe(agent.session.tokens.length - n0);
    // /strip keeps the transcript; switching rebuilds the state by prefill, equal to a fresh one
    store.strip(saved);
    expect(store.list()[0].hasPayload).toBe(false);
    const sw2 = await agent.switchTo(saved.id);
    expect(sw2?.prefilled).toBe(true);
    const fresh = engine.newSession();
    await fresh.eval(engine.tokenizer.encode(saved.conversation.held));
    expect(agent.session.tokens).toEqual(fresh.tokens);
    expect(Buffer.from(agent.session.savePayload()).equals(Buffer.from(fresh.savePayload()))).toBe(true);
    fresh.dispose();
    // a damaged session file is reported and skipped; the others stay
    fs.writeFileSync(path.join(store.dir, 'abcdefabcdef.json'), '{not json');
    expect(store.list().map((x) => x.id)).toEqual([saved.id]);
    expect(warnings.some((w) => /abcdefabcdef: skipped, its file is damaged/.test(w))).toBe(true);
    // a damaged payload: the switch says so and rebuilds by prefill
    agent.save();
    fs.writeFileSync(path.join(store.dir, `${saved.id}.kvc`), Buffer.from('KVC garbage'));
    const sw3 = await agent.switchTo(saved.id);
    expect(sw3?.prefilled).toBe(true);
    expect(warnings.some((w) => /KV payload is damaged/.test(w))).toBe(true);
    store.delete(saved.id);
    expect(store.list()).toEqual([]);
    expect(await agent.switchTo('123456')).toBeUndefined();
    agent.dispose();
  });

  it('/compact restarts the context from the task and a summary', async () => {
    const { agent } = setup([final('An answer.'), 'The task was X; nothing is left.', final('Continuing.')]);
    await agent.send('Do X');
    await agent.compact();
    expect(agent.conv.messages.filter((m) => m.role === 'user').length).toBe(1);
    expect(String(agent.conv.messages[1].content)).toMatch(/^Do X\n\n\[The earlier context was compacted\. Summary of the work so far:\]\nThe task was X; nothing is left\./);
    const r = await agent.send('Go on');
    expect(r.answer).toBe('Continuing.');
    agent.dispose();
  });
});
