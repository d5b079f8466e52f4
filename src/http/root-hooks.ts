// The Fastify door's first and last hooks: the envelope's headers on every response, the edge
// rules, the data version a request's caches are checked against (read once per turn, as the
// fast lane reads it), the answer written with the turn's others, and the request's figures.
import type { FastifyInstance } from 'fastify'
import type { Metrics } from '../observability/metrics.js'
import { answering } from './early-answer.js'
import { edgeViolation } from './edge.js'
import type { Envelope } from './envelope.js'
import { closeConnectionAfterResponse } from './tls.js'
import type { Turn } from './turn.js'

export interface RootHooksOptions {
  envelope: Envelope
  isDraining: () => boolean
  turn: Turn
  metrics: Metrics
  /** PETSTORE_REQUEST_TIMEOUT: how long a close waits for the rest of a body answered early. */
  requestTimeoutMs: number
}

export function registerRootHooks(app: FastifyInstance, o: RootHooksOptions): void {
  app.decorateRequest('dataVersion', undefined)
  app.decorateRequest('deadline', 0)
  app.addHook('onRequest', (request, reply, done) => {
    const config = request.routeOptions.config
    const h = o.envelope.headers(request.id, config.deprecated === true)
    for (let i = 0; i < h.length; i += 2) reply.header(h[i]!, h[i + 1])
    // While draining, each keep-alive connection serves one more request and then closes, so
    // clients reconnect to another instance instead of racing the listener's close.
    if (o.isDraining()) closeConnectionAfterResponse(request, reply)
    const violation = edgeViolation(request.raw)
    if (violation !== null) return done(violation)
    // Public routes consult no cache; the others read the version once, before any cache.
    if (config.public === true) return done()
    o.turn.withVersion((version, deadline, unavailable) => {
      request.dataVersion = version
      request.deadline = deadline
      done(unavailable ?? undefined)
    })
  })
  app.addHook('onSend', (request, reply, payload, done) => {
    // At once, even before the body is in; a close after it waits for the rest (early-answer.ts).
    o.turn.write(() => {
      answering(request.raw, reply.raw, o.requestTimeoutMs)
      done(null, payload)
    })
  })
  // Labels come from the route's operation name, never the URL, so their number stays small.
  app.addHook('onResponse', (request, reply, done) => {
    const operation = request.routeOptions.config.operation ?? 'unknown'
    const labels = { operation, method: request.method, status: reply.statusCode }
    o.metrics.requestCompleted(labels, reply.elapsedTime / 1000)
    done()
  })
}
