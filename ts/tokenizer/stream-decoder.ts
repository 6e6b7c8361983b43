/**
 * Streaming detokenizer: token ids in, text out, never a half UTF-8 character. Bytes of an
 * incomplete character are held until the token that completes them arrives.
 */
export class StreamDecoder {
  private dec = new TextDecoder('utf-8', { fatal: false });
  constructor(private readonly bytesOf: (id: number) => Uint8Array) {}

  push(id: number): string {
    return this.dec.decode(this.bytesOf(id), { stream: true });
  }

  /** Flushes held bytes (an incomplete character at the very end becomes U+FFFD). */
  end(): string {
    return this.dec.decode();
  }
}
