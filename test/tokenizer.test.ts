import * as fs from 'node:fs';
import { describe, expect, it } from 'vitest';
import { readGguf } from '../ts/gguf/index.js';
import { Tokenizer } from '../ts/tokenizer/tokenizer.js';
import { fixture } from './helpers.js';

for (const model of ['tinyA', 'tinyR']) {
  describe(`tokenizer (${model}) against Hugging Face tokenizers`, () => {
    const tok = new Tokenizer(readGguf(fixture(model, `${model}-bf16.gguf`)));
    const ref = JSON.parse(fs.readFileSync(fixture(model, 'reference.json'), 'utf8'));

    it('tokenizer_cases: ids equal HF ids, decoding gives HF text back', () => {
      for (const c of ref.tokenizer_cases) {
        expect(tok.encode(c.text), JSON.stringify(c.text)).toEqual(c.ids);
        expect(tok.decode(c.ids)).toBe(c.decoded);
      }
    });

    it('every case prompt tokenizes to prompt_ids', () => {
      for (const c of ref.cases) expect(tok.encode(c.text), c.kind).toEqual(c.prompt_ids);
    });
  });
}

describe('tokenizer against Hugging Face tokenizers on extra cases (scripts, emoji, marks, whitespace, added tokens, rendered chats)', () => {
  const tok = new Tokenizer(readGguf(fixture('tinyA', 'tinyA-bf16.gguf')));
  const hf = JSON.parse(fs.readFileSync(fixture('tokenizer', 'hf-tokenizer-cases.json'), 'utf8'));
  it(`${hf.cases.length} cases (≥ 50 beyond reference.json)`, () => {
    expect(hf.cases.length).toBeGreaterThanOrEqual(50);
    let bad = 0;
    for (const c of hf.cases) {
      const ids = tok.encode(c.text);
      if (JSON.stringify(ids) !== JSON.stringify(c.ids)) { bad++; console.log('MISMATCH', JSON.stringify(c.text).slice(0, 120), '\n ours', JSON.stringify(ids).slice(0, 200), '\n hf  ', JSON.stringify(c.ids).slice(0, 200)); }
      expect(tok.decode(c.ids)).toBe(c.decoded);
    }
    expect(bad).toBe(0);
  });
});

describe('streaming decode never emits half a character', () => {
  const tok = new Tokenizer(readGguf(fixture('tinyA', 'tinyA-bf16.gguf')));
  it('multi-byte characters split across tokens come out whole', () => {
    const text = '🚀 città 日本語 👨‍👩‍👧';
    const ids = tok.encode(text);
    const d = tok.decoder();
    const parts = ids.map((id) => d.push(id));
    parts.push(d.end());
    for (const p of parts) expect(p).not.toMatch(/\uFFFD/);
    expect(parts.join('')).toBe(text);
    // at least one token held bytes back (the byte-level vocab splits 4-byte emoji)
    expect(parts.some((p) => p === '')).toBe(true);
  });
});
