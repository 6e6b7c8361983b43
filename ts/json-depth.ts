/**
 * The nesting bound every JSON text from outside gets before it is parsed: every walk after the
 * parse (the chat template's Python-style JSON, schema checks) recurses, and a body, a frame or a
 * tool call's `arguments` string nested thousands deep would overflow the stack there.
 */

/** Deepest array/object nesting a request body may have (agents' tool schemas stay far below). */
export const MAX_JSON_DEPTH = 128;

/** Nesting depth of JSON text, counted without parsing (strings and escapes skipped). */
export function jsonDepth(text: string, limit = Infinity): number {
  let depth = 0, max = 0, inString = false;
  for (let i = 0; i < text.length; i++) {
    const c = text.charCodeAt(i);
    if (inString) {
      if (c === 0x5c) i++; // backslash: skip the escaped character
      else if (c === 0x22) inString = false;
    } else if (c === 0x22) inString = true;
    else if (c === 0x5b || c === 0x7b) { if (++depth > max) { max = depth; if (max > limit) return max; } }
    else if (c === 0x5d || c === 0x7d) depth--;
  }
  return max;
}
