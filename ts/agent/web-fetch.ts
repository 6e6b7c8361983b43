/**
 * The agent's web_fetch: a URL read with the checks a tool driven by model output needs. Every hop
 * (the URL and each redirect) whose host resolves to a loopback, private, link-local or unspecified
 * address asks first, as shell commands do (`127.0.0.1`, `localhost`, `0x7f000001` and a redirect
 * to them reached the machine's own services unasked); at most MAX_REDIRECTS redirects; the body is
 * read up to a byte cap and the rest dropped (a 1.2 GB body took 2.5 GB of memory).
 */
import { lookup } from 'node:dns/promises';
import { isIP } from 'node:net';
import { ToolError, type Workspace } from './workspace.js';

export const MAX_REDIRECTS = 5;

/** Whether an IP address is this machine's or a private network's (IPv4-mapped IPv6 included). */
export function isLocalAddress(ip: string): boolean {
  let a = ip.toLowerCase();
  const mapped = /^::ffff:(\d+\.\d+\.\d+\.\d+)$/.exec(a), hex = /^::ffff:([0-9a-f]{1,4}):([0-9a-f]{1,4})$/.exec(a);
  if (mapped) a = mapped[1];
  else if (hex) { const h = parseInt(hex[1], 16), l = parseInt(hex[2], 16); a = `${h >> 8}.${h & 255}.${l >> 8}.${l & 255}`; }
  if (isIP(a) === 4) {
    const [p, q] = a.split('.').map(Number);
    return p === 0 || p === 10 || p === 127 || (p === 100 && q >= 64 && q < 128) || (p === 169 && q === 254) || (p === 172 && q >= 16 && q < 32) || (p === 192 && q === 168) || p >= 224;
  }
  return a === '::' || a === '::1' || /^f[cd][0-9a-f]{2}:/.test(a) || /^fe[89ab][0-9a-f]:/.test(a);
}

/** The body of url as text, each hop checked; maxBytes caps what is read. */
export async function webFetch(url: string, o: { ws: Workspace; signal?: AbortSignal; maxBytes: number; timeoutMs?: number }): Promise<string> {
  const signal = AbortSignal.any([AbortSignal.timeout(o.timeoutMs ?? 30_000), ...(o.signal ? [o.signal] : [])]);
  let at = url;
  for (let hop = 0; ; hop++) {
    let u: URL;
    try { u = new URL(at); } catch { throw new ToolError(`not a URL: ${at}`); }
    if (u.protocol !== 'http:' && u.protocol !== 'https:') throw new ToolError(`${at}: only http and https URLs are fetched`);
    const host = u.hostname.replace(/^\[|\]$/g, '');
    const addrs = isIP(host) ? [host] : (await lookup(host, { all: true }).catch(() => [])).map((r) => r.address);
    const local = addrs.find(isLocalAddress);
    if (local !== undefined && !(await o.ws.ok(`fetch ${u.href} (${host} is a local or private address: ${local})`))) {
      throw new ToolError(`${u.href}: ${host} is a local or private address (${local}) and the fetch was not confirmed`);
    }
    const r = await fetch(u, { redirect: 'manual', signal });
    const next = r.headers.get('location');
    if (r.status >= 300 && r.status < 400 && next) {
      await r.body?.cancel();
      if (hop >= MAX_REDIRECTS) throw new ToolError(`${url}: more than ${MAX_REDIRECTS} redirects`);
      at = new URL(next, u).href;
      continue;
    }
    const chunks: Uint8Array[] = [];
    let n = 0, cut = false;
    if (r.body) {
      for await (const c of r.body as unknown as AsyncIterable<Uint8Array>) {
        const take = Math.min(c.byteLength, o.maxBytes - n);
        chunks.push(c.subarray(0, take));
        n += take;
        if (take < c.byteLength) { cut = true; break; }
      }
    }
    const text = Buffer.concat(chunks).toString('utf8');
    return `[HTTP ${r.status}]${at !== url ? ` (from ${at})` : ''}\n${text}${cut ? `\n[body cut at ${o.maxBytes} bytes]` : ''}`;
  }
}
