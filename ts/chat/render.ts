/**
 * Native renderer of the Qwen3.6 chat template (fixtures/templates/qwen3.6.jinja), byte-identical
 * to the template run by transformers' Python jinja2 (tests compare on ~50 conversations).
 * Rules: model-spec §6. Evaluation order (and so which error wins) follows the template.
 */
import { lstripChars, pyJson, pyStrip, rstripChars } from './py-compat.js';
import { MAX_JSON_DEPTH, jsonDepth } from '../json-depth.js';
import { ChatTemplateError, type ChatMessage, type ContentPart, type RenderOptions, type ToolCallFunction } from './types.js';

const TOOLS_INSTRUCTIONS =
  '\n\nIf you choose to call a function ONLY reply in the following format with NO suffix:\n\n<tool_call>\n<function=example_function_name>\n' +
  '<parameter=example_parameter_1>\nvalue_1\n</parameter>\n<parameter=example_parameter_2>\nThis is the value for the second parameter\n' +
  'that can span\nmultiple lines\n</parameter>\n</function>\n</tool_call>\n\n<IMPORTANT>\nReminder:\n- Function calls MUST follow the specified ' +
  'format: an inner <function=...></function> block must be nested within <tool_call></tool_call> XML tags\n- Required parameters MUST be ' +
  'specified\n- You may provide optional reasoning for your function call in natural language BEFORE the function call, but NOT after\n' +
  '- If there is no function call available, answer the question like normal with your current knowledge and do not tell the user about ' +
  'function calls\n</IMPORTANT>';

const isObject = (x: unknown): x is Record<string, unknown> => typeof x === 'object' && x !== null && !Array.isArray(x);

class Renderer {
  private images = 0;
  private videos = 0;
  constructor(private readonly o: RenderOptions) {}

  /** The template's render_content macro. */
  content(content: unknown, countVision: boolean, isSystem = false): string {
    if (typeof content === 'string') return content;
    if (Array.isArray(content)) {
      let s = '';
      for (const item of content as ContentPart[]) {
        const it = isObject(item) ? item : {};
        if ('image' in it || 'image_url' in it || it.type === 'image') {
          if (isSystem) throw new ChatTemplateError('System message cannot contain images.');
          if (countVision) this.images++;
          if (this.o.addVisionId) s += `Picture ${this.images}: `;
          s += '<|vision_start|><|image_pad|><|vision_end|>';
        } else if ('video' in it || it.type === 'video') {
          if (isSystem) throw new ChatTemplateError('System message cannot contain videos.');
          if (countVision) this.videos++;
          if (this.o.addVisionId) s += `Video ${this.videos}: `;
          s += '<|vision_start|><|video_pad|><|vision_end|>';
        } else if ('text' in it) {
          s += it.text === undefined || it.text === null ? '' : String(it.text);
        } else {
          throw new ChatTemplateError('Unexpected item type in content.');
        }
      }
      return s;
    }
    if (content === null || content === undefined) return '';
    throw new ChatTemplateError('Unexpected content type.');
  }

  render(messages: ChatMessage[]): string {
    if (!messages || messages.length === 0) throw new ChatTemplateError('No messages provided.');
    let out = '';
    const tools = this.o.tools;
    if (Array.isArray(tools) && tools.length > 0) {
      out += '<|im_start|>system\n# Tools\n\nYou have access to the following functions:\n\n<tools>';
      for (const t of tools) out += '\n' + pyJson(t);
      out += '\n</tools>' + TOOLS_INSTRUCTIONS;
      if (messages[0].role === 'system') {
        const c = pyStrip(this.content(messages[0].content, false, true));
        if (c) out += '\n\n' + c;
      }
      out += '<|im_end|>\n';
    } else if (messages[0].role === 'system') {
      out += '<|im_start|>system\n' + pyStrip(this.content(messages[0].content, false, true)) + '<|im_end|>\n';
    }

    // the last real user query: tool responses sent as user turns do not count
    let lastQuery = -1;
    for (let i = messages.length - 1; i >= 0; i--) {
      if (messages[i].role !== 'user') continue;
      const c = pyStrip(this.content(messages[i].content, false));
      if (!(c.startsWith('<tool_response>') && c.endsWith('</tool_response>'))) { lastQuery = i; break; }
    }
    if (lastQuery < 0) throw new ChatTemplateError('No user query found in messages.');

    messages.forEach((m, i) => {
      let content = pyStrip(this.content(m.content, true));
      switch (m.role) {
        case 'system':
          if (i !== 0) throw new ChatTemplateError('System message must be at the beginning.');
          break;
        case 'user':
          out += '<|im_start|>user\n' + content + '<|im_end|>\n';
          break;
        case 'assistant': {
          let reasoning = '';
          if (typeof m.reasoning_content === 'string') reasoning = m.reasoning_content;
          else if (content.includes('</think>')) {
            const before = rstripChars(content.split('</think>')[0], '\n').split('<think>');
            reasoning = lstripChars(before[before.length - 1], '\n');
            const parts = content.split('</think>');
            content = lstripChars(parts[parts.length - 1], '\n');
          }
          reasoning = pyStrip(reasoning);
          if (this.o.preserveThinking === true || i > lastQuery) out += '<|im_start|>assistant\n<think>\n' + reasoning + '\n</think>\n\n' + content;
          else out += '<|im_start|>assistant\n' + content;
          if (Array.isArray(m.tool_calls) && m.tool_calls.length > 0) {
            m.tool_calls.forEach((tc, k) => {
              const fn: ToolCallFunction = 'function' in tc && tc.function !== undefined ? tc.function : (tc as ToolCallFunction);
              if (k === 0) out += pyStrip(content) ? '\n\n<tool_call>\n<function=' + fn.name + '>\n' : '<tool_call>\n<function=' + fn.name + '>\n';
              else out += '\n<tool_call>\n<function=' + fn.name + '>\n';
              if (fn.arguments !== undefined) {
                for (const [key, value] of Object.entries(toArgs(fn.arguments))) {
                  out += '<parameter=' + key + '>\n' + (typeof value === 'string' ? value : pyJson(value)) + '\n</parameter>\n';
                }
              }
              out += '</function>\n</tool_call>';
            });
          }
          out += '<|im_end|>\n';
          break;
        }
        case 'tool':
          if (i > 0 && messages[i - 1].role !== 'tool') out += '<|im_start|>user';
          out += '\n<tool_response>\n' + content + '\n</tool_response>';
          if (i === messages.length - 1 || messages[i + 1].role !== 'tool') out += '<|im_end|>\n';
          break;
        default:
          throw new ChatTemplateError('Unexpected message role.');
      }
    });

    if (this.o.addGenerationPrompt !== false) {
      out += '<|im_start|>assistant\n';
      out += this.o.enableThinking === false ? '<think>\n\n</think>\n\n' : '<think>\n';
    }
    return out;
  }
}

/** Tool-call arguments: an object, or the JSON text of one (OpenAI sends strings). */
function toArgs(a: Record<string, unknown> | string | null): Record<string, unknown> {
  if (a === null) return {};
  if (typeof a === 'string') {
    if (a.trim() === '') return {};
    let v: unknown;
    if (jsonDepth(a, MAX_JSON_DEPTH) > MAX_JSON_DEPTH) throw new ChatTemplateError(`tool call arguments are nested deeper than ${MAX_JSON_DEPTH} levels`);
    try { v = JSON.parse(a); } catch { throw new ChatTemplateError(`tool call arguments are not valid JSON: ${a.slice(0, 80)}`); }
    if (!isObject(v)) throw new ChatTemplateError('tool call arguments must be a JSON object');
    return v;
  }
  if (!isObject(a)) throw new ChatTemplateError('tool call arguments must be an object');
  return a;
}

export function renderChat(messages: ChatMessage[], o: RenderOptions = {}): string {
  return new Renderer(o).render(messages);
}
