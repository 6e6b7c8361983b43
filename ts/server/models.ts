/** GET /v1/models and /v1/models/:id. */
import type { FastifyInstance } from 'fastify';
import { ApiError } from './errors.js';
import { MODEL_ID, type ServerContext } from './context.js';

export function registerModels(app: FastifyInstance, ctx: ServerContext): void {
  const model = { id: MODEL_ID, object: 'model', created: 0, owned_by: 'quarkstar', context_length: ctx.coordinator.engine.options.ctx };
  app.get('/v1/models', async () => ({ object: 'list', data: [model] }));
  app.get('/v1/models/:id', async (req) => {
    if ((req.params as { id: string }).id !== MODEL_ID) throw new ApiError('not_found', `model ${(req.params as { id: string }).id} not found (this server serves ${MODEL_ID})`);
    return model;
  });
}
