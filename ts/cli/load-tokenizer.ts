/** Opens a GGUF's header and builds its tokenizer (no weights are read). */
import * as fs from 'node:fs';
import { readGguf, type GgufFile } from '../gguf/index.js';
import { modelEnv } from './env.js';
import { missingModelHint } from './model-store.js';
import { Tokenizer } from '../tokenizer/tokenizer.js';

export class CliError extends Error {
  constructor(message: string, readonly exitCode = 2) {
    super(message);
  }
}

export function openModelHeader(path: string): GgufFile {
  if (!fs.existsSync(path)) {
    const hint = missingModelHint(path, modelEnv());
    throw new CliError(`model file "${path}" not found${hint ? ` (${hint})` : ''}`);
  }
  try {
    return readGguf(path);
  } catch (e) {
    throw new CliError((e as Error).message);
  }
}

export function loadTokenizer(path: string): Tokenizer {
  const f = openModelHeader(path);
  try {
    return new Tokenizer(f);
  } catch (e) {
    throw new CliError((e as Error).message);
  }
}

/** Reads the prompt from -p or --prompt-file (exactly one). */
export function promptText(args: { prompt?: string; 'prompt-file'?: string }): string {
  if (args.prompt !== undefined && args['prompt-file'] !== undefined) throw new CliError('give either -p TEXT or --prompt-file FILE, not both');
  if (args['prompt-file'] !== undefined) {
    try {
      return fs.readFileSync(args['prompt-file'], 'utf8');
    } catch (e) {
      throw new CliError(`cannot read --prompt-file "${args['prompt-file']}": ${(e as NodeJS.ErrnoException).code ?? (e as Error).message}`);
    }
  }
  if (args.prompt === undefined) throw new CliError('no prompt: give -p TEXT or --prompt-file FILE');
  return args.prompt;
}

export function readJsonFile(path: string, flag: string): unknown {
  let text: string;
  try {
    text = fs.readFileSync(path, 'utf8');
  } catch (e) {
    throw new CliError(`cannot read ${flag} "${path}": ${(e as NodeJS.ErrnoException).code ?? (e as Error).message}`);
  }
  try {
    return JSON.parse(text);
  } catch (e) {
    throw new CliError(`${flag} "${path}" is not valid JSON: ${(e as Error).message}`);
  }
}
