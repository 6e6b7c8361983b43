/**
 * The GPT-2 byte ↔ printable-character map used by byte-level BPE vocabularies: every byte is a
 * visible character in token strings (space is "Ġ", newline "Ċ").
 */
function build(): { b2u: string[]; u2b: Map<string, number> } {
  const bs: number[] = [];
  for (let b = 33; b <= 126; b++) bs.push(b);
  for (let b = 161; b <= 172; b++) bs.push(b);
  for (let b = 174; b <= 255; b++) bs.push(b);
  const cs = bs.slice();
  let n = 0;
  for (let b = 0; b < 256; b++) if (!bs.includes(b)) { bs.push(b); cs.push(256 + n++); }
  const b2u: string[] = new Array(256);
  const u2b = new Map<string, number>();
  bs.forEach((b, i) => { const c = String.fromCodePoint(cs[i]); b2u[b] = c; u2b.set(c, b); });
  return { b2u, u2b };
}

const MAP = build();
export const BYTE_TO_UNICODE: readonly string[] = MAP.b2u;
export const UNICODE_TO_BYTE: ReadonlyMap<string, number> = MAP.u2b;
