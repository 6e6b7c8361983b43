/**
 * The chat page q36-server serves at `/` to browsers (llama-server and ollama users expect one):
 * one self-contained HTML file — no external scripts, styles, fonts or CDNs — that speaks the
 * WebSocket chat (`/v1/chat/ws`, docs/websocket.md) on its own origin. Answers stream in, the
 * model's thinking is shown folded, tool calls are shown as calls, Stop cancels; settings (system
 * prompt, temperature, thinking on/off) and the conversation are kept in the browser's
 * localStorage, and a reload restores them (the new connection's `session.start` carries the
 * history). Model text is only ever set as text, never as HTML. The Content-Security-Policy
 * allows exactly this page's own script and style (by hash) and connections to its origin.
 */
import { createHash } from 'node:crypto';

const STYLE = `
:root { color-scheme: light dark; --fg: #1d1d1f; --bg: #fafafa; --dim: #6e6e73; --line: #d2d2d7; --me: #e8f0fe; --acc: #0a66c2; }
@media (prefers-color-scheme: dark) { :root { --fg: #e8e8ea; --bg: #161617; --dim: #98989d; --line: #3a3a3c; --me: #1f2a3a; --acc: #5aa9ff; } }
* { box-sizing: border-box; }
body { margin: 0; font: 15px/1.5 system-ui, sans-serif; color: var(--fg); background: var(--bg); display: flex; flex-direction: column; height: 100vh; }
header { display: flex; gap: .75rem; align-items: center; padding: .5rem 1rem; border-bottom: 1px solid var(--line); flex-wrap: wrap; }
header h1 { font-size: 1rem; margin: 0 auto 0 0; }
header label { color: var(--dim); font-size: .85rem; }
#settings { display: none; padding: .5rem 1rem; border-bottom: 1px solid var(--line); }
#settings.open { display: block; }
#settings textarea { width: 100%; min-height: 4rem; }
main { flex: 1; overflow-y: auto; padding: 1rem; }
.msg { max-width: 52rem; margin: 0 auto 1rem; white-space: pre-wrap; overflow-wrap: anywhere; }
.user { background: var(--me); border-radius: .5rem; padding: .5rem .75rem; }
.assistant details { color: var(--dim); margin-bottom: .25rem; }
.assistant details pre { white-space: pre-wrap; font: inherit; margin: .25rem 0 0; }
.call { font-family: ui-monospace, monospace; font-size: .85rem; border: 1px solid var(--line); border-radius: .4rem; padding: .25rem .5rem; margin-top: .25rem; }
.note { color: var(--dim); font-size: .8rem; }
.error { color: #d70015; }
form { display: flex; gap: .5rem; padding: .75rem 1rem; border-top: 1px solid var(--line); max-width: 54rem; width: 100%; margin: 0 auto; }
form textarea { flex: 1; min-height: 2.6rem; max-height: 12rem; resize: vertical; font: inherit; padding: .4rem .6rem; }
button { font: inherit; padding: .35rem .9rem; border-radius: .4rem; border: 1px solid var(--line); background: transparent; color: var(--fg); cursor: pointer; }
button.primary { background: var(--acc); color: #fff; border-color: var(--acc); }
button:disabled { opacity: .5; cursor: default; }
`;

const SCRIPT = `
'use strict';
const KEY = 'q36-chat';
const $ = (id) => document.getElementById(id);
const state = Object.assign({ system: '', temperature: 0.6, thinking: true, messages: [] }, JSON.parse(localStorage.getItem(KEY) || '{}'));
const save = () => localStorage.setItem(KEY, JSON.stringify(state));
let ws = null, current = null, busy = false, ready = false;

function el(tag, cls, text) { const e = document.createElement(tag); if (cls) e.className = cls; if (text !== undefined) e.textContent = text; return e; }
function scroll() { const m = $('log'); m.scrollTop = m.scrollHeight; }
function setBusy(b) { busy = b; $('send').disabled = b || !ready; $('stop').disabled = !b; }
function note(text, cls) { $('log').append(el('div', 'msg note' + (cls ? ' ' + cls : ''), text)); scroll(); }

/** One assistant message's elements: folded thinking, the answer, its tool calls. */
function assistantView(m) {
  const box = el('div', 'msg assistant');
  const det = el('details'); const sum = el('summary', '', 'Thinking'); const pre = el('pre');
  det.append(sum, pre); det.hidden = !m.reasoning; pre.textContent = m.reasoning || '';
  const body = el('div', 'content', m.content || '');
  box.append(det, body);
  for (const c of m.calls || []) box.append(el('div', 'call', c.name + ' ' + JSON.stringify(c.arguments)));
  $('log').append(box);
  return { box, det, pre, body, m };
}
function render() {
  $('log').replaceChildren();
  for (const m of state.messages) { if (m.role === 'user') $('log').append(el('div', 'msg user', m.content)); else assistantView(m); }
  scroll();
}

function connect() {
  if (ws) { ws.onclose = null; ws.close(); }
  ready = false; setBusy(false);
  ws = new WebSocket((location.protocol === 'https:' ? 'wss://' : 'ws://') + location.host + '/v1/chat/ws');
  ws.onopen = () => {
    const history = state.messages.filter((m) => m.content).map((m) => ({ role: m.role, content: m.content }));
    const start = { type: 'session.start', thinking: state.thinking, temperature: state.temperature, history };
    if (state.system) start.system = state.system;
    ws.send(JSON.stringify(start));
  };
  ws.onmessage = (ev) => {
    const f = JSON.parse(ev.data);
    if (f.type === 'session.ready') { ready = true; setBusy(false); $('status').textContent = f.model; }
    else if (f.type === 'reasoning' && current) { current.det.hidden = false; current.m.reasoning += f.text; current.pre.textContent = current.m.reasoning; scroll(); }
    else if (f.type === 'token' && current) { current.m.content += f.text; current.body.textContent = current.m.content; scroll(); }
    else if (f.type === 'tool_call' && current) { current.m.calls.push({ name: f.name, arguments: f.arguments }); current.box.append(el('div', 'call', f.name + ' ' + JSON.stringify(f.arguments))); }
    else if (f.type === 'done') {
      if (current) {
        if (f.finish_reason === 'cancelled' && !current.m.content && !current.m.reasoning) { state.messages.pop(); current.box.remove(); state.messages.pop(); render(); }
        const u = f.usage || {};
        note(f.finish_reason + ' · ' + (u.completion_tokens || 0) + ' tokens · prompt ' + (u.prompt_tokens || 0) + ' (' + (u.cached_tokens || 0) + ' cached)');
      }
      current = null; save(); setBusy(false);
    } else if (f.type === 'error') {
      if (current) { state.messages.pop(); current.box.remove(); state.messages.pop(); render(); current = null; }
      note('error: ' + f.message, 'error'); save(); setBusy(false);
    }
  };
  ws.onclose = () => { ready = false; setBusy(false); $('status').textContent = 'disconnected: reconnecting…'; setTimeout(connect, 1500); };
}

function send(text) {
  if (!text.trim() || busy || !ready) return;
  state.messages.push({ role: 'user', content: text });
  $('log').append(el('div', 'msg user', text));
  const m = { role: 'assistant', content: '', reasoning: '', calls: [] };
  state.messages.push(m);
  current = assistantView(m);
  setBusy(true); scroll(); save();
  ws.send(JSON.stringify({ type: 'message', content: text }));
}

$('form').onsubmit = (e) => { e.preventDefault(); const t = $('input').value; $('input').value = ''; send(t); };
$('input').onkeydown = (e) => { if (e.key === 'Enter' && !e.shiftKey) { e.preventDefault(); $('form').requestSubmit(); } };
$('stop').onclick = () => { if (busy) ws.send(JSON.stringify({ type: 'cancel' })); };
$('new').onclick = () => { if (busy) return; state.messages = []; save(); render(); connect(); };
$('gear').onclick = () => $('settings').classList.toggle('open');
$('system').value = state.system; $('temperature').value = state.temperature; $('thinking').checked = state.thinking;
$('apply').onclick = () => {
  state.system = $('system').value; state.thinking = $('thinking').checked;
  const t = Number($('temperature').value); state.temperature = t >= 0 && t <= 2 ? t : 0.6;
  save(); $('settings').classList.remove('open'); if (!busy) connect();
};
render(); connect();
`;

const BODY = `<header><h1>QuarkStar chat</h1><span class="note" id="status">connecting…</span>
<button id="gear" type="button">Settings</button><button id="new" type="button">New chat</button></header>
<div id="settings"><label for="system">System prompt</label><textarea id="system"></textarea>
<label>Temperature <input id="temperature" type="number" min="0" max="2" step="0.05"></label>
<label><input id="thinking" type="checkbox"> Thinking</label> <button id="apply" type="button">Apply</button>
<span class="note">(applies to the conversation from here on)</span></div>
<main id="log"></main>
<form id="form"><textarea id="input" placeholder="Message (Enter sends, Shift+Enter for a new line)" autofocus></textarea>
<button id="send" class="primary" type="submit" disabled>Send</button><button id="stop" type="button" disabled>Stop</button></form>`;

const hash = (s: string) => `'sha256-${createHash('sha256').update(s, 'utf8').digest('base64')}'`;

/** The page and the Content-Security-Policy that goes with it. */
export const CHAT_PAGE = {
  html: `<!doctype html>\n<html lang="en"><head><meta charset="utf-8"><meta name="viewport" content="width=device-width, initial-scale=1">
<title>QuarkStar chat</title><style>${STYLE}</style></head><body>
${BODY}
<script>${SCRIPT}</script></body></html>\n`,
  csp: `default-src 'none'; script-src ${hash(SCRIPT)}; style-src ${hash(STYLE)}; connect-src 'self' ws: wss:; base-uri 'none'; form-action 'none'; frame-ancestors 'none'`,
  script: SCRIPT,
};
