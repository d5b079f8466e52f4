// The routes' first and last hooks: the common headers and edge rules, the wait for the turn's
// data version, the answer written with the turn's others, and the request's figures.
import type { FastifyInstance } from 'fastify'
import type { Metrics } from '../observability/metrics.js'
import { StorageUnavailableError } from '../storage/errors.js'
import { answering } from './early-answer.js'
import { edgeViolation } from './edge.js'
import type { CommonHeaders } from './replies.js'
import { closeConnectionAfterResponse } from './tls.js'
import type { Turn } from './turn.js'

export interface RootHooksOptions {
  commonHeaders: CommonHeaders
  isDraining: () => boolean
  turn: Turn
  metrics: Metrics
  /** PETSTORE_DATABASE_TIMEOUT: a request's waits on the database, all of them together. */
  databaseTimeoutMs: number
  /** PETSTORE_REQUEST_TIMEOUT: how long a close waits for the rest of a body answered early. */
  requestTimeoutMs: number
}

export function registerRootHooks(app: FastifyInstance, o: RootHooksOptions): void {
  app.decorateRequest('dataVersion', undefined)
  app.decorateRequest('deadline', 0)
  app.addHook('onRequest', async (request, reply) => {
    const config = request.routeOptions.config
    const h = o.commonHeaders.headers(request.id, config.deprecated === true)
    for (let i = 0; i < h.length; i += 2) reply.header(h[i]!, h[i + 1])
    // While draining, each keep-alive connection serves one more request and then closes, so
    // clients reconnect to another instance instead of racing the listener's close.
    if (o.isDraining()) closeConnectionAfterResponse(request, reply)
    const violation = edgeViolation(request.raw)
    if (violation !== null) throw violation
    // Public routes consult no key and no cache, so they do not wait for the version.
    if (config.public === true) return
    request.deadline = performance.now() + o.databaseTimeoutMs
    const version = await o.turn.version(request.deadline)
    if (version instanceof StorageUnavailableError) throw version
    request.dataVersion = version
  })
  app.addHook('onSend', async (request, reply, payload) => {
    await o.turn.end()
    // A close after an answer given before the body was in waits for the rest of it.
    answering(request.raw, reply.raw, o.requestTimeoutMs)
    return payload
  })
  // Labels come from the route's operation name, never the URL, so their number stays small.
  app.addHook('onResponse', async (request, reply) => {
    const operation = request.routeOptions.config.operation ?? 'unknown'
    const labels = { operation, method: request.method, status: reply.statusCode }
    o.metrics.requestCompleted(labels, reply.elapsedTime / 1000)
  })
}
