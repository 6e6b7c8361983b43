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

export function originAllowed(origin: string | undefined, p: OriginPolicy): boolean {
  if (origin === undefined) return true;
  if (p.any) return true;
  if (p.allowed.includes(origin)) return true;
  try {
    const u = new URL(origin);
    return (u.protocol === 'http:' || u.protocol === 'https:') && LOOPBACK.test(u.hostname);
  } catch {
    return false; // "null" (sandboxed frames, file: pages) and garbage
  }
}
