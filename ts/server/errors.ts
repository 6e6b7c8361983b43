/** The server's error catalogue: a stable code and HTTP status per failure, rendered in each API's shape. */
export const ERRORS = {
  invalid_json: { status: 400, type: 'invalid_request_error' },
  invalid_request: { status: 400, type: 'invalid_request_error' },
  unknown_role: { status: 400, type: 'invalid_request_error' },
  template_error: { status: 400, type: 'invalid_request_error' },
  context_length_exceeded: { status: 400, type: 'invalid_request_error' },
  previous_response_not_found: { status: 400, type: 'invalid_request_error' },
  unauthorized: { status: 401, type: 'authentication_error' },
  forbidden: { status: 403, type: 'permission_error' },
  not_found: { status: 404, type: 'not_found_error' },
  timeout: { status: 408, type: 'timeout_error' },
  /** a WebSocket-mode response the client cancelled (never an HTTP status: 499 as nginx logs it) */
  cancelled: { status: 499, type: 'invalid_request_error' },
  body_too_large: { status: 413, type: 'request_too_large' },
  internal: { status: 500, type: 'api_error' },
  overloaded: { status: 503, type: 'overloaded_error' },
} as const;

export type ErrorCode = keyof typeof ERRORS;

export class ApiError extends Error {
  constructor(readonly code: ErrorCode, message: string, readonly param?: string) {
    super(message);
  }
  get status(): number { return ERRORS[this.code].status; }
}

export function openaiError(e: ApiError) {
  return { error: { message: e.message, type: ERRORS[e.code].type, param: e.param ?? null, code: e.code } };
}

export function anthropicError(e: ApiError) {
  return { type: 'error', error: { type: ERRORS[e.code].type, message: e.message } };
}

/** A plain JSON object (not null, not an array). */
export const isObj = (x: unknown): x is Record<string, unknown> => typeof x === 'object' && x !== null && !Array.isArray(x);

/** A request body that must be a JSON object: it, or an invalid_request error. */
export function jsonBody(body: unknown): Record<string, unknown> {
  if (!isObj(body)) throw new ApiError('invalid_request', 'the body must be a JSON object');
  return body;
}
