/** The chat template's marker strings, spelled once (render.ts writes them, the parser and the server look for them). */
export const IM_START = '<|im_start|>';
export const IM_END = '<|im_end|>';
export const THINK_OPEN = '<think>';
export const THINK_CLOSE = '</think>';
/** what opens an assistant turn: the coordinator checkpoints right after it */
export const ASSISTANT_HEADER = 'assistant\n';
/** how the model ends its reasoning (fed for it when a thinking budget runs out) */
export const THINK_END = '\n</think>\n\n';
export const TOOL_CALL_OPEN = '<tool_call>';
export const TOOL_CALL_CLOSE = '</tool_call>';
