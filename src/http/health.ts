// Liveness and readiness, outside /v1 and without authentication.
import type { FastifyInstance } from 'fastify'
import { ApiError } from '../errors.js'
import type { Store } from '../storage/store.js'

export async function healthRoutes(
  app: FastifyInstance,
  /** isDraining: true once the process has been told to stop; readiness then answers 503. */
  opts: { store: Store; isDraining: () => boolean },
): Promise<void> {
  const route = (operation: string) => ({
    config: { public: true, operation },
    schema: { hide: true },
  })
  app.get('/healthz', route('healthz'), async () => ({ status: 'ok' }))
  app.get('/readyz', route('readyz'), async (request) => {
    if (opts.isDraining()) throw new ApiError('service_unavailable', 'shutting down')
    try {
      await opts.store.ping()
    } catch (err) {
      request.log.warn({ err }, 'storage is not reachable')
      throw new ApiError('service_unavailable', 'storage is not reachable')
    }
    return { status: 'ready' }
  })
}
