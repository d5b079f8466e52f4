// The routes' first and last hooks: the common headers on every response, the edge rules,
// the wait for the turn's data version (read once per turn, as the fast lane reads it), the
// answer written with the turn's others, and the request's figures.
import type { FastifyInstance } from 'fastify'
import type { Metrics } from '../observability/metrics.js'
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
  /** PETSTORE_REQUEST_TIMEOUT: how long a close waits for the rest of a body answered early. */
  requestTimeoutMs: number
}

export function registerRootHooks(app: FastifyInstance, o: RootHooksOptions): void {
  app.decorateRequest('dataVersion', undefined)
  app.decorateRequest('deadline', 0)
  app.addHook('onRequest', (request, reply, done) => {
    const config = request.routeOptions.config
    const h = o.commonHeaders.headers(request.id, config.deprecated === true)
    for (let i = 0; i < h.length; i += 2) reply.header(h[i]!, h[i + 1])
    // While draining, each keep-alive connection serves one more request and then closes, so
    // clients reconnect to another instance instead of racing the listener's close.
    if (o.isDraining()) closeConnectionAfterResponse(request, reply)
    done(edgeViolation(request.raw) ?? undefined)
  })
  // Holds every request that needs a key or a cache until the end of its event-loop turn, where
  // one data-version read serves all the turn's requests (turn.ts): the keys and caches it then
  // consults are as fresh as a read of its own. Public routes consult neither and do not wait.
  app.addHook('onRequest', function waitForTurnVersion(request, _reply, done) {
    if (request.routeOptions.config.public === true) return done()
    o.turn.withVersion((version, deadline, unavailable) => {
      request.dataVersion = version
      request.deadline = deadline
      done(unavailable ?? undefined)
    })
  })
  // Holds every answer until the end of its turn, to go out with the turn's others: the client's
  // side wakes once per turn, not once per answer (turn.ts). A close after an answer given before
  // the body was in waits for the rest of it (early-answer.ts).
  app.addHook('onSend', function writeWithTurn(request, reply, payload, done) {
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
