/**
 * What an agent may get from q36-server (test:clients and its CI replay): 200, or a
 * context-length refusal in the provider's own error shape and wording.
 */
export function acceptable(r: { url: string; status: number; response: string }): boolean {
  if (r.status === 200) return true;
  if (r.status !== 400) return false;
  try {
    const j = JSON.parse(r.response);
    if (r.url.startsWith('/v1/messages')) return j.type === 'error' && j.error?.type === 'invalid_request_error' && /^prompt is too long: \d+ tokens > \d+ maximum$/.test(j.error.message);
    return j.error?.code === 'context_length_exceeded' && j.error?.type === 'invalid_request_error';
  } catch {
    return false;
  }
}
