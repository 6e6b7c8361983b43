/** Chat messages as clients send them (OpenAI-style, plus Qwen's reasoning_content). */

export interface ContentPart {
  type?: string;
  text?: string;
  image?: unknown;
  image_url?: unknown;
  video?: unknown;
  [k: string]: unknown;
}

export interface ToolCallFunction {
  name: string;
  /** an object (rendered as parameters), or a JSON string of one (OpenAI wire format) */
  arguments?: Record<string, unknown> | string;
}

export type ToolCall = { type?: string; id?: string; function: ToolCallFunction } | (ToolCallFunction & { id?: string });

export interface ChatMessage {
  role: string;
  content?: string | ContentPart[] | null | unknown;
  reasoning_content?: string | null;
  tool_calls?: ToolCall[] | null;
  tool_call_id?: string;
  name?: string;
}

export interface RenderOptions {
  tools?: unknown[] | null;
  /** append "<|im_start|>assistant\n" and the think opener (default true) */
  addGenerationPrompt?: boolean;
  /** false → "<think>\n\n</think>\n\n" (thinking off); default on */
  enableThinking?: boolean;
  /** keep <think> blocks of earlier assistant turns (Qwen3.6) */
  preserveThinking?: boolean;
  /** prefix images/videos with "Picture N: " / "Video N: " */
  addVisionId?: boolean;
}

/** A template error: the same message the Jinja template raises. */
export class ChatTemplateError extends Error {
  constructor(message: string) {
    super(message);
    this.name = 'ChatTemplateError';
  }
}
