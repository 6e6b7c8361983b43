import * as fs from 'node:fs';
import { describe, expect, it } from 'vitest';
import { Template } from '@huggingface/jinja';
import { renderChat } from '../ts/chat/render.js';
import { pyJson, pyStrip } from '../ts/chat/py-compat.js';
import { fixture } from './helpers.js';

interface Conv { name: string; messages: any[]; tools?: any[]; add_generation_prompt: boolean; kwargs?: Record<string, unknown> }
const convs: Conv[] = JSON.parse(fs.readFileSync(fixture('chat', 'conversations.json'), 'utf8'));
const hf = JSON.parse(fs.readFileSync(fixture('chat', 'hf-chat-rendered.json'), 'utf8')).rendered as { name: string; text?: string; error?: string }[];
const template = new Template(fs.readFileSync(fixture('templates', 'qwen3.6.jinja'), 'utf8'));

const ours = (c: Conv) => renderChat(c.messages, {
  tools: c.tools, addGenerationPrompt: c.add_generation_prompt,
  enableThinking: c.kwargs?.enable_thinking as boolean | undefined,
  preserveThinking: c.kwargs?.preserve_thinking as boolean | undefined,
  addVisionId: c.kwargs?.add_vision_id as boolean | undefined,
});

describe('chat renderer', () => {
  it(`has ${convs.length} conversations (≥ 40), with errors among them`, () => {
    expect(convs.length).toBeGreaterThanOrEqual(40);
    expect(hf.filter((r) => r.error).length).toBeGreaterThanOrEqual(4);
  });

  describe('byte-identical to the template run by transformers (Python jinja2)', () => {
    convs.forEach((c, i) => {
      it(c.name, () => {
        expect(hf[i].name).toBe(c.name);
        if (hf[i].error) expect(() => ours(c)).toThrow(hf[i].error);
        else expect(ours(c)).toBe(hf[i].text);
      });
    });
  });

  describe('byte-identical to the template run by @huggingface/jinja', () => {
    convs.forEach((c) => {
      it(c.name, () => {
        let jsOut: string | undefined, jsErr: string | undefined;
        try {
          jsOut = template.render({ messages: c.messages, tools: c.tools, add_generation_prompt: c.add_generation_prompt, ...(c.kwargs ?? {}) });
        } catch (e) { jsErr = (e as Error).message; }
        if (jsErr !== undefined) expect(() => ours(c)).toThrow();
        else expect(ours(c)).toBe(jsOut);
      });
    });
  });
});

describe('Python semantics the template depends on', () => {
  it('json.dumps formatting of numbers and strings', () => {
    expect(pyJson({ a: 1, b: [1, 2.5], c: null, d: true, s: 'é/"\n\x1f' })).toBe('{"a": 1, "b": [1, 2.5], "c": null, "d": true, "s": "é/\\"\\n\\u001f"}');
    expect(pyJson(1e-7)).toBe('1e-07');
    expect(pyJson(0.0001)).toBe('0.0001');
    expect(pyJson(0.00001)).toBe('1e-05');
    expect(pyJson(1.5e300)).toBe('1.5e+300');
    expect(pyJson(123456.789)).toBe('123456.789');
    expect(pyJson(9e15)).toBe('9000000000000000'); // a safe integer: printed as an int
    expect(pyJson(1.25e16)).toBe('1.25e+16');
    expect(pyJson(-0.5)).toBe('-0.5');
  });
  it('str.strip whitespace set', () => {
    expect(pyStrip('\x1f\x85 hi \u3000')).toBe('hi');
    expect(pyStrip('\ufeffhi')).toBe('\ufeffhi');
  });
});
