/**
 * Request body schemas, one per endpoint, checked by fastify (Ajv) before the handler runs. They
 * state the shape every handler relies on (objects where it reads fields, arrays where it
 * iterates); the handlers keep the checks that need more than a shape (roles, tool schemas,
 * block types) with messages of their own. Unknown fields are allowed: clients send many.
 */
const int = (minimum?: number) => ({ type: ['integer', 'null'], ...(minimum !== undefined ? { minimum } : {}) });
const num = { type: ['number', 'null'] };
const bool = { type: ['boolean', 'null'] };
const obj = { type: 'object' };
const stop = { type: ['string', 'array', 'null'], items: { type: 'string' } };
const sampling = { temperature: num, top_p: num, top_k: int(0), min_p: num, seed: int(), stream: bool };
/** OpenAI's penalties and logit bias, with OpenAI's types and ranges (sampling.ts refuses values that would change anything) */
const penalty = { type: ['number', 'null'], minimum: -2, maximum: 2 };
const penalties = {
  presence_penalty: penalty, frequency_penalty: penalty,
  logit_bias: { type: ['object', 'null'], propertyNames: { pattern: '^[0-9]+$' }, additionalProperties: { type: 'number', minimum: -100, maximum: 100 } },
};
/** a message's content: a string, null, or an array of part objects */
const content = { type: ['string', 'array', 'null'], items: obj };

export const chatCompletionsBody = {
  type: 'object',
  required: ['messages'],
  properties: {
    ...sampling,
    messages: { type: 'array', minItems: 1, items: { type: 'object', required: ['role'], properties: { role: { type: 'string' }, content, tool_calls: { type: ['array', 'null'], items: obj } } } },
    tools: { type: ['array', 'null'], items: obj },
    max_tokens: int(1), max_completion_tokens: int(1), n: { type: ['integer', 'null'], minimum: 1, maximum: 16 }, stop, logprobs: bool, top_logprobs: int(0),
    stream_options: { type: ['object', 'null'] },
    ...penalties,
  },
} as const;

export const messagesBody = {
  type: 'object',
  required: ['messages', 'max_tokens'],
  properties: {
    ...sampling,
    max_tokens: { type: 'integer', minimum: 1 },
    system: { type: ['string', 'array', 'null'], items: obj },
    messages: {
      type: 'array', minItems: 1,
      items: {
        type: 'object', required: ['role', 'content'],
        properties: {
          role: { type: 'string' },
          content: {
            type: ['string', 'array'],
            items: { type: 'object', required: ['type'], properties: { type: { type: 'string' }, text: { type: 'string' }, content: { type: ['string', 'array', 'null'], items: obj } } },
          },
        },
      },
    },
    tools: { type: ['array', 'null'], items: obj },
    stop_sequences: stop,
    thinking: { type: ['object', 'null'] },
  },
} as const;

export const countTokensBody = {
  ...messagesBody,
  required: ['messages'],
  properties: { ...messagesBody.properties, max_tokens: int(1) },
} as const;

export const responsesBody = {
  type: 'object',
  required: ['input'],
  properties: {
    ...sampling,
    input: { type: ['string', 'array'], items: obj },
    instructions: { type: ['string', 'null'] },
    tools: { type: ['array', 'null'], items: obj },
    max_output_tokens: int(1),
    reasoning: { type: ['object', 'null'] },
  },
} as const;

export const completionsBody = {
  type: 'object',
  required: ['prompt'],
  properties: { ...sampling, ...penalties, prompt: { type: ['string', 'array'] }, max_tokens: int(1), stop, stream_options: { type: ['object', 'null'] } },
} as const;

/** One Ajv error as a sentence naming the field: "messages[0].content must be a string or an array". */
export function validationMessage(v: { instancePath: string; keyword: string; params: Record<string, unknown>; message?: string }[] | undefined): string {
  const e = v?.[0];
  if (!e) return 'invalid request body';
  const at = e.instancePath.split('/').filter(Boolean).map((p, i) => (/^\d+$/.test(p) ? `[${p}]` : i ? `.${p}` : p)).join('');
  if (e.keyword === 'required') return `${at ? `${at}.` : ''}${String(e.params.missingProperty)} is required`;
  if (e.keyword === 'type') {
    const names: Record<string, string> = { number: 'a number', integer: 'an integer', string: 'a string', array: 'an array', object: 'an object', boolean: 'true or false' };
    const types = String(e.params.type).split(',').filter((t) => t !== 'null').map((t) => names[t] ?? t);
    return at ? `${at} must be ${types.join(' or ')}` : 'the body must be a JSON object';
  }
  return `${at || 'the body'} ${e.message ?? 'is invalid'}`;
}

type Schema = { type?: string | readonly string[]; items?: Schema; properties?: Record<string, Schema>; required?: readonly string[]; minimum?: number; maximum?: number; minItems?: number };

/**
 * The same checks for a body that does not arrive over HTTP (a WebSocket event): the subset of
 * JSON Schema these schemas use (type, items, properties, required, minimum, maximum, minItems),
 * with Ajv's error shape, so validationMessage() words the first problem the same way.
 */
export function schemaErrors(schema: Schema, value: unknown, path = ''): Parameters<typeof validationMessage>[0] {
  const types = schema.type === undefined ? [] : typeof schema.type === 'string' ? [schema.type] : [...schema.type];
  const is = (t: string) => t === 'null' ? value === null : t === 'array' ? Array.isArray(value) : t === 'integer' ? Number.isInteger(value)
    : t === 'object' ? typeof value === 'object' && value !== null && !Array.isArray(value) : typeof value === t;
  if (types.length && !types.some(is)) return [{ instancePath: path, keyword: 'type', params: { type: types.join(',') } }];
  if (typeof value === 'number') {
    if (schema.minimum !== undefined && value < schema.minimum) return [{ instancePath: path, keyword: 'minimum', params: {}, message: `must be >= ${schema.minimum}` }];
    if (schema.maximum !== undefined && value > schema.maximum) return [{ instancePath: path, keyword: 'maximum', params: {}, message: `must be <= ${schema.maximum}` }];
  }
  if (Array.isArray(value)) {
    if (schema.minItems !== undefined && value.length < schema.minItems) return [{ instancePath: path, keyword: 'minItems', params: {}, message: `must NOT have fewer than ${schema.minItems} items` }];
    if (schema.items) for (let i = 0; i < value.length; i++) { const e = schemaErrors(schema.items, value[i], `${path}/${i}`); if (e?.length) return e; }
  } else if (typeof value === 'object' && value !== null) {
    const o = value as Record<string, unknown>;
    for (const r of schema.required ?? []) if (o[r] === undefined) return [{ instancePath: path, keyword: 'required', params: { missingProperty: r } }];
    for (const [k, sub] of Object.entries(schema.properties ?? {})) if (o[k] !== undefined) { const e = schemaErrors(sub, o[k], `${path}/${k}`); if (e?.length) return e; }
  }
  return [];
}
