/** The events of a streamed (server-sent events) HTTP response body, each as its raw text, as they arrive. */
export async function* sseEvents(body: ReadableStream<Uint8Array>): AsyncGenerator<string> {
  const reader = body.getReader(), dec = new TextDecoder();
  let buf = '';
  for (;;) {
    const { done, value } = await reader.read();
    if (done) return;
    buf += dec.decode(value, { stream: true });
    let i;
    while ((i = buf.indexOf('\n\n')) >= 0) {
      yield buf.slice(0, i);
      buf = buf.slice(i + 2);
    }
  }
}
