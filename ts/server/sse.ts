/** Server-sent events on a raw Node response, with keep-alive comments during long prefills. */
import type { ServerResponse } from 'node:http';

export class Sse {
  private timer: NodeJS.Timeout;
  closed = false;
  constructor(private readonly res: ServerResponse, keepAliveMs = 5000) {
    res.writeHead(200, { 'content-type': 'text/event-stream', 'cache-control': 'no-cache', connection: 'keep-alive' });
    this.timer = setInterval(() => this.comment('keep-alive'), keepAliveMs);
    res.on('close', () => { this.closed = true; clearInterval(this.timer); });
  }
  comment(text: string): void { if (!this.closed) this.res.write(`: ${text}\n\n`); }
  data(obj: unknown): void { if (!this.closed) this.res.write(`data: ${JSON.stringify(obj)}\n\n`); }
  event(name: string, obj: unknown): void { if (!this.closed) this.res.write(`event: ${name}\ndata: ${JSON.stringify(obj)}\n\n`); }
  raw(text: string): void { if (!this.closed) this.res.write(text); }
  end(): void { clearInterval(this.timer); if (!this.closed) this.res.end(); this.closed = true; }
}
