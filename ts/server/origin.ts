/**
 * Which web pages may talk to the server. Requests without an Origin header come from programs
 * (agents, SDKs, curl) and are always allowed; a browser sends one, and any page the user visits
 * could otherwise drive (or flood) the local model. Loopback pages are the user's own tools.
 */
export interface OriginPolicy {
  /** every origin (the server runs with --cors) */
  any: boolean;
  /** exact origins allowed besides loopback ones, e.g. "https://chat.example" */
  allowed: string[];
}

const LOOPBACK = /^(localhost|127(?:\.\d{1,3}){3}|\[::1\])$/i;

export function originAllowed(origin: string | undefined, p: OriginPolicy, host?: string): boolean {
  if (origin === undefined) return true;
  if (p.any) return true;
  if (p.allowed.includes(origin)) return true;
  try {
    const u = new URL(origin);
    if (u.protocol !== 'http:' && u.protocol !== 'https:') return false;
    // the server's own pages (its chat page): the origin is the Host the request came to, which
    // the Host check has already let through (loopback, --host, or any with --host 0.0.0.0)
    if (host !== undefined && u.host.toLowerCase() === host.toLowerCase()) return true;
    return LOOPBACK.test(u.hostname);
  } catch {
    return false; // "null" (sandboxed frames, file: pages) and garbage
  }
}

/**
 * Which Host names the server answers (a DNS-rebinding guard: a page of evil.example whose name
 * later resolves to 127.0.0.1 sends `Host: evil.example`, and is same-origin to itself, so the
 * Origin check alone lets it read /props and /metrics). Loopback names always; `names` besides
 * (q36-server's --host); any with `any` (--host 0.0.0.0 / ::, serving a network on purpose).
 */
export interface HostPolicy { any: boolean; names: string[] }

export function hostAllowed(host: string | undefined, p: HostPolicy): boolean {
  if (host === undefined || p.any) return true;
  let name: string;
  try { name = new URL(`http://${host}`).hostname; } catch { return false; }
  return LOOPBACK.test(name) || p.names.some((n) => n.toLowerCase() === name.toLowerCase() || `[${n}]` === name);
}
