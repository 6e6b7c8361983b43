/** `q36 -m MODEL --dump-tokens -p TEXT [--json]`: ids and pieces, without loading weights. */
import type { Tokenizer } from '../tokenizer/tokenizer.js';

export function dumpTokens(tok: Tokenizer, text: string, json: boolean): string {
  const ids = tok.encode(text);
  const pieces = ids.map((id) => tok.piece(id));
  if (json) return JSON.stringify({ ids, pieces });
  return ids.map((id, i) => `${String(id).padStart(6)}  ${JSON.stringify(pieces[i])}`).join('\n') + `\n${ids.length} tokens`;
}
