/**
 * Saved agent sessions (`~/.q36/kvcache/sessions` by default): per session a JSON transcript
 * (id, title, times, the conversation's messages and exact held text) and, unless stripped, the
 * KV payload in the disk cache's KVC format (model fingerprint, text, payload, CRC), so a switch
 * restores the KV state without prefilling. Writes are atomic (temporary file, then rename); a
 * damaged file is reported and skipped, never loaded, and the others stay usable.
 */
import { createHash } from 'node:crypto';
import * as fs from 'node:fs';
import * as path from 'node:path';
import { decodeFile, encodeFile, KvcError } from '../kvc/format.js';
import type { ChatMessage } from '../chat/types.js';
import { writeFileAtomic } from '../safe-file.js';

export interface SessionRecord {
  version: 1;
  id: string;
  title: string;
  created: number;
  updated: number;
  /** the conversation (Conversation.toJSON) */
  conversation: { messages: ChatMessage[]; held: string; answered: number };
  /** whether a KV payload file accompanies it */
  hasPayload: boolean;
}

/** A stable id from the first prompt and the creation time (12 hex digits of SHA-256). */
export function sessionId(firstPrompt: string, created: number): string {
  return createHash('sha256').update(`${created}\0${firstPrompt}`).digest('hex').slice(0, 12);
}

function atomicWrite(file: string, data: string | Uint8Array): void {
  writeFileAtomic(file, data, 0o600);
}

export class SessionStore {
  constructor(readonly dir: string, private readonly warn: (msg: string) => void = () => {}) {
    fs.mkdirSync(dir, { recursive: true });
  }

  private json(id: string): string { return path.join(this.dir, `${id}.json`); }
  private kvc(id: string): string { return path.join(this.dir, `${id}.kvc`); }

  /** Saves the transcript and, when given, the payload (KVC); the transcript last, so it never points at a missing payload. */
  save(r: Omit<SessionRecord, 'version' | 'hasPayload'>, kv?: { fingerprint: Buffer; text: string; payload: Uint8Array; tokens: number; ctx: number }): SessionRecord {
    const rec: SessionRecord = { version: 1, ...r, hasPayload: !!kv };
    if (kv) {
      const now = Math.floor(Date.now() / 1000);
      atomicWrite(this.kvc(r.id), encodeFile({
        header: { quantBits: 0, reason: 'shutdown', flags: 0, tokens: kv.tokens, hits: 0, ctx: kv.ctx, created: now, lastUsed: now, payloadBytes: kv.payload.byteLength },
        fingerprint: kv.fingerprint, text: kv.text, payload: kv.payload, tools: new Map(),
      }));
    } else fs.rmSync(this.kvc(r.id), { force: true });
    atomicWrite(this.json(r.id), JSON.stringify(rec));
    return rec;
  }

  /** Saved sessions, most recently updated first; damaged ones reported and skipped. */
  list(): SessionRecord[] {
    const out: SessionRecord[] = [];
    for (const f of fs.readdirSync(this.dir).filter((x) => x.endsWith('.json')).sort()) {
      const r = this.read(f.slice(0, -5));
      if (r) out.push(r);
    }
    return out.sort((a, b) => b.updated - a.updated);
  }

  /** The session with this id or unique id prefix, or undefined (with the reason warned). */
  find(prefix: string): SessionRecord | undefined {
    if (!/^[0-9a-f]{1,12}$/.test(prefix)) { this.warn(`"${prefix}" is not a session id (12 hex digits, or a prefix of them)`); return undefined; }
    const ids = fs.readdirSync(this.dir).filter((x) => x.endsWith('.json') && x.startsWith(prefix)).map((x) => x.slice(0, -5));
    if (ids.length === 0) { this.warn(`no saved session ${prefix}`); return undefined; }
    if (ids.length > 1) { this.warn(`${prefix} matches ${ids.length} sessions: give more digits`); return undefined; }
    return this.read(ids[0]);
  }

  private read(id: string): SessionRecord | undefined {
    try {
      const r = JSON.parse(fs.readFileSync(this.json(id), 'utf8')) as SessionRecord;
      if (r.version !== 1 || r.id !== id || !Array.isArray(r.conversation?.messages) || typeof r.conversation.held !== 'string') throw new Error('not a version 1 session record');
      return r;
    } catch (e) {
      this.warn(`session ${id}: skipped, its file is damaged (${(e as Error).message})`);
      return undefined;
    }
  }

  /** The payload of a session, checked (fingerprint, CRC, text); undefined with a warning when unusable. */
  payload(r: SessionRecord, fingerprint: Buffer): { text: string; payload: Uint8Array } | undefined {
    if (!r.hasPayload) return undefined;
    let b: Buffer;
    try { b = fs.readFileSync(this.kvc(r.id)); } catch { this.warn(`session ${r.id}: its KV payload is missing; rebuilding by prefill`); return undefined; }
    try {
      const f = decodeFile(b);
      if (!f.fingerprint.equals(fingerprint)) { this.warn(`session ${r.id}: its KV payload belongs to another model file; rebuilding by prefill`); return undefined; }
      return { text: f.text, payload: f.payload };
    } catch (e) {
      this.warn(`session ${r.id}: its KV payload is damaged (${e instanceof KvcError ? e.message : (e as Error).message}); rebuilding by prefill`);
      return undefined;
    }
  }

  delete(id: string): void {
    fs.rmSync(this.kvc(id), { force: true });
    fs.rmSync(this.json(id), { force: true });
  }

  /** Keeps the transcript and title, drops the payload. */
  strip(r: SessionRecord): SessionRecord {
    const { version: _v, hasPayload: _h, ...rest } = r;
    return this.save(rest);
  }
}
