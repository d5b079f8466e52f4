// Liveness and readiness, outside /v1 and without authentication.
import type { FastifyInstance } from 'fastify'
import { ApiError } from '../errors.js'
import type { Store } from '../storage/store.js'

export interface HealthOptions {
  store: Store
  /** True once the process has been told to stop: readiness then answers 503. */
  isDraining: () => boolean
}

export async function healthRoutes(app: FastifyInstance, opts: HealthOptions): Promise<void> {
  const hidden = { hide: true }
  app.get(
    '/healthz',
    { config: { public: true, operation: 'healthz' }, schema: hidden },
    async () => ({ status: 'ok' }),
  )
  app.get(
    '/readyz',
    { config: { public: true, operation: 'readyz' }, schema: hidden },
    async (request) => {
      if (opts.isDraining()) throw new ApiError('service_unavailable', 'shutting down')
      try {
        await opts.store.ping()
      } catch (err) {
        request.log.warn({ err }, 'storage is not reachable')
        throw new ApiError('service_unavailable', 'storage is not reachable')
      }
      return { status: 'ready' }
    },
  )
}
