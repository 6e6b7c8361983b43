/** What both backends do first: read the GGUF, check it is a qwen35moe we run, and check ctx. */
import { readGguf, type GgufFile } from '../gguf/index.js';
import { validateModel, type ModelShape } from '../model/shape.js';
import { Tokenizer } from '../tokenizer/tokenizer.js';
import type { EngineOptions } from './types.js';

export function openModel(options: Pick<EngineOptions, 'model' | 'ctx'>): { file: GgufFile; shape: ModelShape; tokenizer: Tokenizer } {
  const file = readGguf(options.model);
  const shape = validateModel(file);
  const tokenizer = new Tokenizer(file);
  if (!(options.ctx >= 1 && Number.isInteger(options.ctx))) throw new Error(`ctx must be a positive integer, got ${options.ctx}`);
  if (options.ctx > shape.contextLength) throw new Error(`ctx ${options.ctx} exceeds the model's context length ${shape.contextLength}`);
  return { file, shape, tokenizer };
}
