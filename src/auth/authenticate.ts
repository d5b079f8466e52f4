// The routes' authentication: which routes need a key, and the onRequest hook that admits.
import type { FastifyInstance, FastifyRequest } from 'fastify'
import { isApiTarget } from '../http/request-target.js'
import type { Admissions } from './admission.js'
import type { AuthenticatedKey } from './api-keys.js'

/**
 * Default deny: only a route declared public answers without a key. A target no route matched is
 * read as loosely as any router could, so it gets 401 rather than a 404 that confirms a path.
 */
function requiresKey(request: FastifyRequest): boolean {
  return request.is404 ? isApiTarget(request.url) : request.routeOptions.config.public !== true
}

/**
 * The key that authenticated the request. Handlers take their key from here: a route that needs
 * one cannot run without it, whatever hook order or registration mistake would let it.
 */
export function authenticatedKey(request: FastifyRequest): AuthenticatedKey {
  const key = request.apiKey
  if (key === null) throw new Error('a handler that needs an API key ran without one')
  return key
}

/** Registers the hook that admits every request that needs a key, before anything reads it. */
export function registerAuth(app: FastifyInstance, admissions: Admissions): void {
  app.decorateRequest('apiKey', null)
  app.addHook('onRequest', async (request, reply) => {
    if (!requiresKey(request)) return
    const a = await admissions.admit(
      request.headers.authorization,
      request.ip,
      request.dataVersion?.keys,
      request.deadline,
    )
    request.apiKey = a.key
    const h = a.headers
    for (let i = 0; i < h.length; i += 2) reply.header(h[i]!, h[i + 1])
    if (a.refusal !== null) throw a.refusal
  })
}
