/** `q36 --render -m MODEL --messages-file F.json [--tools-file T.json] [--nothink]`: the exact prompt. */
import { renderChat } from '../chat/render.js';
import type { ChatMessage } from '../chat/types.js';
import { CliError, readJsonFile } from './load-tokenizer.js';

export interface RenderArgs {
  messagesFile?: string;
  toolsFile?: string;
  nothink?: boolean;
}

export function renderFromFiles(a: RenderArgs): string {
  if (!a.messagesFile) throw new CliError('--render needs --messages-file F.json (an array of messages, or {"messages": [...], "tools": [...]})');
  const m = readJsonFile(a.messagesFile, '--messages-file') as unknown;
  let messages: unknown, tools: unknown;
  if (Array.isArray(m)) messages = m;
  else if (m && typeof m === 'object' && Array.isArray((m as { messages?: unknown }).messages)) ({ messages, tools } = m as { messages: unknown; tools?: unknown });
  else throw new CliError(`--messages-file "${a.messagesFile}" must hold an array of messages or an object with "messages"`);
  if (a.toolsFile) tools = readJsonFile(a.toolsFile, '--tools-file');
  if (tools !== undefined && !Array.isArray(tools)) throw new CliError('tools must be a JSON array');
  for (const [i, msg] of (messages as unknown[]).entries()) {
    if (!msg || typeof msg !== 'object' || typeof (msg as { role?: unknown }).role !== 'string') throw new CliError(`message ${i} has no "role" string`);
  }
  try {
    return renderChat(messages as ChatMessage[], { tools: tools as unknown[] | undefined, enableThinking: a.nothink ? false : undefined });
  } catch (e) {
    throw new CliError(`chat template: ${(e as Error).message}`);
  }
}
