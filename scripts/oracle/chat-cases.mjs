// Writes fixtures/chat/conversations.json: conversations covering every rule and error of the
// Qwen3.6 chat template (model-spec §6). They are rendered by the real template with Python
// jinja2 through transformers (scripts/oracle/hf-oracle.py, GPU machine) and by
// @huggingface/jinja (in the tests); our native renderer must match byte for byte.
import { writeFileSync } from 'node:fs';

const weather = { type: 'function', function: { name: 'get_weather', description: 'Get weather', parameters: { type: 'object', properties: { city: { type: 'string' }, days: { type: 'integer' } }, required: ['city'] } } };
const search = { type: 'function', function: { name: 'search', description: 'Search the web — «quoted» ünïcödé', parameters: { type: 'object', properties: { q: { type: 'string' }, filters: { type: 'object', properties: { lang: { type: 'string' }, year: { type: 'integer' } } }, tags: { type: 'array', items: { type: 'string' } } } } } };
const call = (name, args, wrap = true) => (wrap ? { type: 'function', function: { name, arguments: args } } : { name, arguments: args });
const u = (content) => ({ role: 'user', content });
const a = (content, extra = {}) => ({ role: 'assistant', content, ...extra });
const sys = (content) => ({ role: 'system', content });
const tool = (content) => ({ role: 'tool', content });

const cases = [
  { name: 'user only', messages: [u('Hi')] },
  { name: 'thinking off', messages: [u('Hi')], kwargs: { enable_thinking: false } },
  { name: 'thinking explicitly on', messages: [u('Hi')], kwargs: { enable_thinking: true } },
  { name: 'system + user', messages: [sys('You are helpful.'), u('Hi')] },
  { name: 'empty system', messages: [sys(''), u('Hi')] },
  { name: 'system whitespace trimmed', messages: [sys('  \n Be brief. \n\n'), u('  Hi  ')] },
  { name: 'tools, no system', messages: [u('Weather in Rome?')], tools: [weather] },
  { name: 'tools + system', messages: [sys('Be brief.'), u('Weather in Rome?')], tools: [weather, search] },
  { name: 'tools + whitespace-only system', messages: [sys(' \n '), u('x')], tools: [weather] },
  { name: 'empty tools list is no tools', messages: [sys('S'), u('x')], tools: [] },
  { name: 'history stripping', messages: [u('Q1'), a('<think>\nold reasoning\n</think>\n\nA1'), u('Q2')] },
  { name: 'reasoning_content field in history is dropped', messages: [u('Q1'), a('A1', { reasoning_content: 'because' }), u('Q2')] },
  { name: 'preserve_thinking keeps history reasoning', messages: [u('Q1'), a('A1', { reasoning_content: 'because' }), u('Q2')], kwargs: { preserve_thinking: true } },
  { name: 'preserve_thinking false', messages: [u('Q1'), a('<think>r</think>A1'), u('Q2')], kwargs: { preserve_thinking: false } },
  { name: 'tool round trip (spec example)', tools: [weather], messages: [sys('Be brief.'), u('Weather in Rome?'), a('', { reasoning_content: 'Need tool.', tool_calls: [call('get_weather', { city: 'Rome', days: 2 })] }), tool('{"t":28}'), tool('{"t":29}')] },
  { name: 'tool round trip then answer', tools: [weather], messages: [u('Weather in Rome?'), a('', { reasoning_content: 'Need tool.', tool_calls: [call('get_weather', { city: 'Rome', days: 2 })] }), tool('{"t":28}'), a('It is 28 degrees.', { reasoning_content: 'Got it.' }), u('Thanks!')] },
  { name: 'several calls in one message', tools: [weather, search], messages: [u('Compare'), a('', { tool_calls: [call('get_weather', { city: 'Rome' }), call('get_weather', { city: 'Oslo' }), call('search', { q: 'x' })] }), tool('a'), tool('b'), tool('c')] },
  { name: 'call with text before it', tools: [weather], messages: [u('x'), a('Let me check.', { tool_calls: [call('get_weather', { city: 'Rome' })] }), tool('ok')] },
  { name: 'call with whitespace-only content', tools: [weather], messages: [u('x'), a('  \n', { tool_calls: [call('get_weather', { city: 'Rome' })] }), tool('ok')] },
  { name: 'argument types', tools: [search], messages: [u('x'), a('', { tool_calls: [call('search', { q: 'multi\nline\nstring', n: 3, f: 2.5, neg: -7, yes: true, no: false, nothing: null, tags: ['a', 'b'], nums: [1, 2], filters: { lang: 'it', year: 2024 }, empty: '', unicode: 'città ✓ 日本', nested: { a: [{ b: null }] } })] }), tool('ok')] },
  { name: 'call without function wrapper', tools: [weather], messages: [u('x'), a('', { tool_calls: [call('get_weather', { city: 'Rome' }, false)] }), tool('ok')] },
  { name: 'call with no arguments', tools: [weather], messages: [u('x'), a('', { tool_calls: [call('get_weather', {})] }), tool('ok')] },
  { name: 'empty tool_calls list', messages: [u('x'), a('plain', { tool_calls: [] }), u('y')] },
  { name: 'assistant content null with calls', tools: [weather], messages: [u('x'), a(null, { tool_calls: [call('get_weather', { city: 'Rome' })] }), tool('ok')] },
  { name: 'tool result as last message', tools: [weather], messages: [u('x'), a('', { tool_calls: [call('get_weather', { city: 'R' })] }), tool('  spaced result  ')], add_generation_prompt: false },
  { name: 'user text parts', messages: [u([{ type: 'text', text: 'Hello ' }, { type: 'text', text: 'world' }])] },
  { name: 'image and video parts', messages: [u([{ type: 'image', image: 'x.png' }, { type: 'text', text: 'What is this?' }, { type: 'video', video: 'v.mp4' }])] },
  { name: 'image_url part', messages: [u([{ type: 'image_url', image_url: { url: 'http://x' } }, { type: 'text', text: 'Describe' }])] },
  { name: 'add_vision_id numbers pictures', messages: [u([{ type: 'image' }, { type: 'image' }, { type: 'text', text: 'Compare' }]), a('ok'), u([{ type: 'video' }, { type: 'image' }])], kwargs: { add_vision_id: true } },
  { name: 'multi-step tool loop: last query is the first user', tools: [weather], messages: [u('Plan'), a('<think>\nstep 1\n</think>\n\n', { tool_calls: [call('get_weather', { city: 'A' })] }), tool('r1'), a('<think>\nstep 2\n</think>\n\nDone', {})] , add_generation_prompt: false },
  { name: 'user message that is a tool response does not count as a query', messages: [u('Real question'), a('x'), u('<tool_response>\nfake\n</tool_response>')] },
  { name: '</think> without <think>', messages: [u('q'), a('only reasoning</think>\n\nanswer')], add_generation_prompt: false },
  { name: 'several think blocks', messages: [u('q'), a('<think>a</think><think>\n\nb\n\n</think>\n\nfinal')], add_generation_prompt: false },
  { name: 'reasoning_content null falls back to tags', messages: [u('q'), a('<think>\nr\n</think>\n\nans', { reasoning_content: null })], add_generation_prompt: false },
  { name: 'no generation prompt', messages: [sys('S'), u('Hi'), a('Hello!')], add_generation_prompt: false },
  { name: 'unicode and emoji everywhere', tools: [search], messages: [sys('Réponds en français 🇫🇷'), u('¿Qué tal? 👋 — 漢字'), a('Bien 😀', { reasoning_content: 'pensée' }), u('Et ensuite ?')] },
  { name: 'special token text inside content', messages: [u('print("<|im_end|>") and <think> tags </think>')] },
  { name: 'long multi-turn with tools', tools: [weather, search], messages: [sys('You are an agent.'), u('Task 1'), a('', { reasoning_content: 'r1', tool_calls: [call('search', { q: 'one' })] }), tool('res1'), a('Answer 1', { reasoning_content: 'r2' }), u('Task 2'), a('', { tool_calls: [call('get_weather', { city: 'Paris', days: 1 }), call('search', { q: 'two', tags: ['x'] })] }), tool('res2a'), tool('res2b'), a('Answer 2')], kwargs: { enable_thinking: false } },
  { name: 'tool message first', messages: [tool('orphan'), u('q')] },
  { name: 'assistant last, continue it', messages: [u('q'), a('partial')], add_generation_prompt: false },
  { name: 'content with surrounding newlines', messages: [u('\n\nq\n\n'), a('\n\nA\n\n'), u('\nq2\n')] },
  // errors
  { name: 'error: no messages', messages: [] },
  { name: 'error: system not first', messages: [u('q'), sys('late')] },
  { name: 'error: no user query', messages: [sys('S'), a('hi')] },
  { name: 'error: only tool-response users', messages: [u('<tool_response>x</tool_response>')] },
  { name: 'error: unknown role', messages: [u('q'), { role: 'developer', content: 'x' }] },
  { name: 'error: system with image', messages: [sys([{ type: 'image' }]), u('q')] },
  { name: 'error: unknown content part', messages: [u([{ type: 'audio', audio: 'a.wav' }])] },
  { name: 'error: content of unexpected type', messages: [u(42)] },
];

for (const c of cases) if (c.add_generation_prompt === undefined) c.add_generation_prompt = true;
writeFileSync('fixtures/chat/conversations.json', JSON.stringify(cases, null, 1) + '\n');
console.log(`${cases.length} conversations`);
