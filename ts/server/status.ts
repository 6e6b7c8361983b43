/**
 * Endpoints for operators and clients' probes: HEAD / and GET / (Claude Code probes the base URL
 * before a session; a browser gets the chat page), GET /health, GET /props (what this server runs), GET /metrics (Prometheus).
 */
import type { FastifyInstance } from 'fastify';
import { MODEL_ID, type ServerContext } from './context.js';
import { CHAT_PAGE } from './web/chat-page.js';

export function registerStatus(app: FastifyInstance, ctx: ServerContext, o: { requests: Map<string, number> }): void {
  const e = ctx.coordinator.engine;
  // a browser (Accept: text/html) gets the chat page; programs probing the base URL the JSON
  app.get('/', async (req, reply) => {
    if (/\btext\/html\b/.test(String(req.headers.accept ?? ''))) {
      return reply.type('text/html; charset=utf-8').header('content-security-policy', CHAT_PAGE.csp)
        .header('x-content-type-options', 'nosniff').header('referrer-policy', 'no-referrer').header('cache-control', 'no-store').send(CHAT_PAGE.html);
    }
    return { name: 'q36-server', model: MODEL_ID, chat_page: '/ (Accept: text/html)', endpoints: ['/v1/models', '/v1/chat/completions', '/v1/messages', '/v1/messages/count_tokens', '/v1/responses', '/v1/completions', '/v1/chat/ws', '/health', '/props', '/metrics'] };
  });
  app.get('/health', async () => ({ status: 'ok' }));
  app.get('/props', async () => ({
    model: MODEL_ID, model_path: e.options.model, backend: e.backend, ctx: e.options.ctx,
    kv_types: e.options.kvTypes ?? { k: 'f16', v: 'f16' }, default_max_tokens: ctx.defaultMaxTokens,
    disk_cache: ctx.disk ? { dir: ctx.disk.o.dir, budget_bytes: ctx.disk.o.budgetBytes } : null,
    batched_sessions: ctx.coordinator.slotCount, batched_step_rows: e.batchRows,
  }));
  app.get('/metrics', async (_req, reply) => {
    const s = ctx.coordinator.stats;
    const lines: string[] = [];
    const metric = (name: string, type: 'counter' | 'gauge', help: string, values: [string, number][]) => {
      lines.push(`# HELP ${name} ${help}`, `# TYPE ${name} ${type}`);
      for (const [labels, v] of values) lines.push(`${name}${labels} ${Number.isFinite(v) ? v : 0}`);
    };
    metric('q36_http_requests_total', 'counter', 'HTTP requests by method, route and status', [...o.requests].map(([k, v]) => { const [m, r, st] = k.split(' '); return [`{method="${m}",route="${r}",status="${st}"}`, v]; }));
    metric('q36_turns_total', 'counter', 'model turns run', [['', s.requests]]);
    metric('q36_prompt_tokens_total', 'counter', 'prompt tokens prefilled (not reused)', [['', s.prefilled]]);
    metric('q36_cached_tokens_total', 'counter', 'prompt tokens reused from the live session or the disk cache', [['', s.reused]]);
    metric('q36_generated_tokens_total', 'counter', 'tokens generated', [['', s.generated]]);
    metric('q36_prefill_tokens_per_second', 'gauge', 'prefill speed over the server\'s life', [['', s.prefillMs > 0 ? s.prefilled / (s.prefillMs / 1000) : 0]]);
    metric('q36_decode_tokens_per_second', 'gauge', 'decode speed over the server\'s life', [['', s.decodeMs > 0 ? s.generated / (s.decodeMs / 1000) : 0]]);
    metric('q36_ram_cache_saves_total', 'counter', 'conversations kept in the in-memory prompt cache', [['', s.ramSaves]]);
    metric('q36_ram_cache_loads_total', 'counter', 'in-memory prompt cache hits loaded', [['', s.ramLoads]]);
    metric('q36_disk_cache_loads_total', 'counter', 'disk KV cache hits loaded', [['', s.diskLoads]]);
    metric('q36_disk_cache_saves_total', 'counter', 'disk KV cache checkpoints written', [['', s.diskSaves]]);
    metric('q36_requests_refused_total', 'counter', 'requests refused because the queue was full', [['', s.refused]]);
    metric('q36_request_timeouts_total', 'counter', 'requests ended by --request-timeout', [['', s.timeouts]]);
    metric('q36_queue_depth', 'gauge', 'requests waiting for a session slot', [['', ctx.coordinator.waiting]]);
    metric('q36_slots', 'gauge', 'live sessions served at once (--batched-session)', [['', ctx.coordinator.slotCount]]);
    metric('q36_slots_busy', 'gauge', 'slots serving a request now', [['', ctx.coordinator.busySlots]]);
    const x = ctx.coordinator.exec.stats;
    metric('q36_decode_steps_total', 'counter', 'decode steps run (each advances one or more sessions)', [['', x.steps]]);
    metric('q36_decode_step_rows_total', 'counter', 'session tokens those steps advanced', [['', x.rows]]);
    metric('q36_draft_steps_total', 'counter', 'speculative draft steps run (--draft)', [['', s.draftSteps]]);
    metric('q36_draft_tokens_total', 'counter', 'drafted tokens verified', [['', s.drafted]]);
    metric('q36_draft_accepted_total', 'counter', 'drafted tokens accepted (generated without a step of their own)', [['', s.accepted]]);
    reply.header('content-type', 'text/plain; version=0.0.4');
    return lines.join('\n') + '\n';
  });
}
