/**
 * Model text on a terminal: the model can produce any bytes, and an escape sequence printed raw
 * can move the cursor, rewrite the screen, set the window title or, on some terminals, answer
 * back as typed input. On a terminal, C0/C1 control characters other than newline and tab are
 * shown in caret notation (ESC → "^[", DEL → "^?"); pipes and files get the exact text.
 */
// eslint-disable-next-line no-control-regex
const CONTROLS = /[\u0000-\u0008\u000b-\u001f\u007f-\u009f]/g;

export function safeForTerminal(s: string): string {
  return s.replace(CONTROLS, (c) => {
    const code = c.charCodeAt(0);
    if (code === 0x7f) return '^?';
    if (code < 0x20) return '^' + String.fromCharCode(code + 0x40);
    return `<U+${code.toString(16).toUpperCase().padStart(4, '0')}>`;
  });
}
