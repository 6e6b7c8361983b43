/**
 * Server-sent events on a raw Node response, with keep-alives while nothing else is sent (a long
 * prefill): the API's own data event where it has one (`onIdle`), else an SSE comment. Some
 * clients reset their idle timers only on data events (Qwen Code's 240 s stream timeout cut a
 * cold 46K-token prefill that was kept alive by comments alone).
 */
import type { ServerResponse } from 'node:http';

/** Milliseconds of silence before a keep-alive. */
export const KEEP_ALIVE_MS = 5000;

export class Sse {
  private timer: NodeJS.Timeout;
  private wrote = false;
  closed = false;
  /** the keep-alive to send when the stream has been silent for keepAliveMs (default: a comment) */
  onIdle?: () => void;
  constructor(private readonly res: ServerResponse, keepAliveMs = KEEP_ALIVE_MS) {
    res.writeHead(200, { 'content-type': 'text/event-stream', 'cache-control': 'no-cache', connection: 'keep-alive' });
    this.timer = setInterval(() => {
      if (!this.wrote) { if (this.onIdle) this.onIdle(); else this.comment('keep-alive'); }
      this.wrote = false;
    }, keepAliveMs);
    res.on('close', () => { this.closed = true; clearInterval(this.timer); });
  }
  private write(s: string): void { if (!this.closed) { this.res.write(s); this.wrote = true; } }
  comment(text: string): void { this.write(`: ${text}\n\n`); }
  data(obj: unknown): void { this.write(`data: ${JSON.stringify(obj)}\n\n`); }
  event(name: string, obj: unknown): void { this.write(`event: ${name}\ndata: ${JSON.stringify(obj)}\n\n`); }
  raw(text: string): void { this.write(text); }
  end(): void { clearInterval(this.timer); if (!this.closed) this.res.end(); this.closed = true; }
}
