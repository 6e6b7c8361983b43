/** What every route needs: the coordinator, the tool memory, defaults. */
import type { SampleOptions } from '../engine/types.js';
import type { Coordinator } from './coordinator.js';
import type { ToolMemory } from './tool-memory.js';

export interface ServerContext {
  coordinator: Coordinator;
  tools: ToolMemory;
  modelName: string;
  sampling: SampleOptions;
  defaultMaxTokens: number;
}

export const MODEL_ID = 'qwen3.6-35b-a3b';
