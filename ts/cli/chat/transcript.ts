/**
 * The chat transcript as text appended to the live session: the first turn is rendered by the
 * chat template; every later turn appends exactly the bytes the template would put between the
 * previous answer and the new generation prompt, so only the new suffix is prefilled.
 */
import { renderChat } from '../../chat/render.js';
import { pyStrip } from '../../chat/py-compat.js';

export type ThinkMode = 'on' | 'off' | 'max';

const opener = (mode: ThinkMode) => (mode === 'off' ? '<think>\n\n</think>\n\n' : '<think>\n');

export function firstTurn(user: string, mode: ThinkMode, system?: string): string {
  const messages = system ? [{ role: 'system', content: system }, { role: 'user', content: user }] : [{ role: 'user', content: user }];
  return renderChat(messages, { enableThinking: mode === 'off' ? false : undefined });
}

/** Closes the previous assistant turn and opens the next one. */
export function nextTurn(user: string, mode: ThinkMode): string {
  return `<|im_end|>\n<|im_start|>user\n${pyStrip(user)}<|im_end|>\n<|im_start|>assistant\n${opener(mode)}`;
}
