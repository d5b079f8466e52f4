// Builds the HTTP application from its dependencies: Fastify's routes, hooks and error handlers
// around admission, the pet operations and the replies. Listening is left to the caller, so tests
// build a fresh app per test and drive it in-process.
import type { IncomingMessage } from 'node:http'
import type { Http2SecureServer } from 'node:http2'
import type { Socket } from 'node:net'
import Fastify, {
  type FastifyInstance,
  type FastifyReply,
  type FastifyServerOptions,
} from 'fastify'
import type { Redis } from 'ioredis'
import { Admissions } from './auth/admission.js'
import { ApiKeyVerifier } from './auth/api-keys.js'
import { registerAuth } from './auth/authenticate.js'
import { openRateCounters } from './auth/rate-counters.js'
import { type Clock, systemClock } from './clock.js'
import type { Config } from './config.js'
import { ApiError } from './errors.js'
import { registerBodies } from './http/bodies.js'
import { registerCors } from './http/cors.js'
import { docsPage } from './http/docs-page.js'
import { holdContinue } from './http/early-answer.js'
import { handleClientError, registerErrorHandling, sendOutcome } from './http/error-handling.js'
import { createOriginOf, registerForwarding } from './http/forwarded.js'
import { healthRoutes } from './http/health.js'
import { enforceHttp2Limits, Http2Bodies } from './http/http2-limits.js'
import { indexRoute } from './http/index-route.js'
import { registerOpenApi } from './http/openapi.js'
import { CommonHeaders, errorOutcome } from './http/replies.js'
import { requestId } from './http/request-id.js'
import { lazyChildLogger, RequestLogController } from './http/request-log.js'
import { registerRootHooks } from './http/root-hooks.js'
import { enforceSendLimits } from './http/send-deadline.js'
import {
  closeHttp2SessionsOnClose,
  type TlsMaterial,
  tlsServerOptions,
  transportHeaders,
} from './http/tls.js'
import { http1Limits, type TransportLimits } from './http/transport-limits.js'
import { Turn } from './http/turn.js'
import './http/types.js'
import { Metrics } from './observability/metrics.js'
import { DeprecatedCallCounter, deprecationHeaders } from './pets/deprecation.js'
import { PetOperations } from './pets/operations.js'
import { MAX_CACHED_PAGES, MAX_CACHED_PETS, ReadCache } from './pets/read-cache.js'
import { petRoutes } from './pets/routes.js'
import { PetService } from './pets/service.js'
import type { Store } from './storage/store.js'

export interface AppDependencies {
  config: Config
  store: Store
  clock?: Clock
  logger?: FastifyServerOptions['logger']
  /** Readiness answers 503 while this returns true (set on SIGTERM). */
  isDraining?: () => boolean
  /** Certificate and key (from loadTls): the server speaks HTTPS, and HTTP/2 when asked. */
  tls?: TlsMaterial
  /** Where request, rate-limit, deprecation and storage figures go; a fresh set when absent. */
  metrics?: Metrics
  /** The rate-limit counters' store when config.rateLimitStore is `redis` (see openRedis). */
  redis?: Redis
}

const BODY_LIMIT_BYTES = 64 * 1024
const IDEMPOTENCY_PURGE_INTERVAL_MS = 60 * 60 * 1000

export async function buildApp(deps: AppDependencies): Promise<FastifyInstance> {
  const { config, store } = deps
  const clock = deps.clock ?? systemClock
  if (config.rateLimitStore === 'redis' && !deps.redis) {
    throw new Error('rateLimitStore is redis but no Redis client was given to buildApp')
  }
  const commonHeaders = new CommonHeaders({
    transport: transportHeaders(deps.tls, config.hstsMaxAgeSeconds),
    deprecation: deprecationHeaders(config.deprecatedAt),
  })
  const isDraining = deps.isDraining ?? (() => false)
  const metrics = deps.metrics ?? new Metrics({ processMetrics: false })
  metrics.watchStore(store)
  const app = createFastify(deps, commonHeaders)
  registerForwarding(app, createOriginOf(config.trustProxy))
  registerBodies(app, enforceLimits(app, deps.tls, limitsOf(config)))
  registerErrorHandling(app, { isDraining })
  registerRootHooks(app, {
    commonHeaders,
    isDraining,
    turn: new Turn(store),
    metrics,
    databaseTimeoutMs: config.databaseTimeoutMs,
    requestTimeoutMs: config.requestTimeoutMs,
  })
  await registerCors(app, config.corsOrigins)
  const perKey = { max: config.rateLimitMax, windowMs: config.rateLimitWindowMs }
  const perAddress = { max: config.authFailureLimitMax, windowMs: config.authFailureWindowMs }
  const admissions = new Admissions({
    verifier: new ApiKeyVerifier(store, clock, config.apiKeys),
    rateLimit: perKey,
    authFailureLimit: perAddress,
    counters: openRateCounters(
      { perKey, perAddress },
      config.rateLimitStore === 'redis' ? deps.redis : undefined,
      app.log,
    ),
    onRateLimited: (policy) => metrics.rateLimitRejected(policy),
  })
  registerAuth(app, admissions)
  await registerOpenApi(app, config)
  await app.register(docsPage, { specUrl: '/v1/openapi.json' })
  await app.register(indexRoute, { docsUrl: '/docs', specUrl: '/v1/openapi.json' })

  const service = new PetService(store, clock)
  const deprecatedCalls = new DeprecatedCallCounter(clock, config.deprecatedCallLogIntervalMs)
  metrics.watchDeprecatedCalls(() => deprecatedCalls.counts())
  const operations = new PetOperations({
    service,
    clock,
    deprecatedCalls,
    fallbackOrigin: new URL(config.productionUrl).origin,
    pages: new ReadCache(MAX_CACHED_PAGES),
    pets: new ReadCache(MAX_CACHED_PETS),
  })
  await app.register(healthRoutes, { store, isDraining })
  await app.register(petRoutes, operations)
  purgeIdempotencyKeys(app, service)
  return app
}

function limitsOf(config: Config): TransportLimits {
  return {
    requestTimeoutMs: config.requestTimeoutMs,
    keepAliveTimeoutMs: config.keepAliveTimeoutMs,
  }
}

/** Fastify with the service's options. */
function createFastify(deps: AppDependencies, commonHeaders: CommonHeaders): FastifyInstance {
  const { config } = deps
  const limits = limitsOf(config)
  // Node's own 400 for a missing Host has an empty body: the edge check answers that instead.
  const serverOptions = { ...http1Limits(limits), requireHostHeader: false }
  // Requests answered while their body was still arriving (a 413, a 401): a timeout of that body
  // ends the connection without a second answer.
  const answeredEarly = new WeakMap<Socket, IncomingMessage>()
  const app = Fastify({
    logger: deps.logger ?? false,
    logController: new RequestLogController(),
    childLoggerFactory: lazyChildLogger,
    genReqId: requestId,
    bodyLimit: BODY_LIMIT_BYTES,
    // Off: request.ip, host and protocol follow forwarded.ts instead (registerForwarding).
    trustProxy: false,
    routerOptions: { maxParamLength: 1000 },
    requestTimeout: config.requestTimeoutMs,
    keepAliveTimeout: config.keepAliveTimeoutMs,
    http: serverOptions,
    forceCloseConnections: 'idle',
    // Fastify's own 503 while closing has a body outside the Error schema; requests that still
    // arrive on open connections are served instead (storage closes only after they finish).
    return503OnClosing: false,
    clientErrorHandler: (error, socket) =>
      handleClientError(
        error,
        socket,
        commonHeaders,
        (s) => answeredEarly.get(s)?.complete === false,
      ),
    frameworkErrors: (_error, request, reply) => {
      // Before any hook ran: the common headers are set here. The framework's message repeats
      // the whole URL, at any length: say what is wrong instead.
      const error = new ApiError('invalid_request', 'the request URL is malformed')
      sendOutcome(reply as FastifyReply, {
        ...errorOutcome(error, request.log),
        headers: commonHeaders.headers(request.id),
      })
    },
    ...tlsServerOptions(deps.tls, serverOptions, limits),
  })
  app.addHook('onResponse', (request, _reply, done) => {
    if (!request.raw.complete) answeredEarly.set(request.raw.socket, request.raw)
    done()
  })
  // Admission, the media type and the declared length are decided before any 100 Continue.
  holdContinue(app.server)
  return app
}

/**
 * The limits on what the server sends, and on HTTP/2 sessions: their bodies late past the request
 * timeout fail as they are read, so the routes answer 408.
 */
function enforceLimits(
  app: FastifyInstance,
  tls: TlsMaterial | undefined,
  limits: TransportLimits,
): Http2Bodies | undefined {
  const deadline = enforceSendLimits(app, limits)
  if (!tls?.http2) return undefined
  const bodies = new Http2Bodies()
  const server = app.server as unknown as Http2SecureServer
  enforceHttp2Limits(server, limits, (stream) => bodies.stalled(stream), deadline)
  closeHttp2SessionsOnClose(app)
  return bodies
}

function purgeIdempotencyKeys(app: FastifyInstance, service: PetService): void {
  const purge = () =>
    service.purgeExpiredIdempotencyKeys().catch((err) => app.log.warn({ err }, 'purge failed'))
  const timer = setInterval(purge, IDEMPOTENCY_PURGE_INTERVAL_MS).unref()
  app.addHook('onReady', async () => {
    await purge()
  })
  app.addHook('onClose', async () => clearInterval(timer))
}
