// Builds the HTTP application from its dependencies; listening is left to the caller, so tests
// build a fresh app per test and drive it in-process.
import type { IncomingMessage, Server } from 'node:http'
import type { Http2SecureServer, Http2ServerRequest } from 'node:http2'
import type { Socket } from 'node:net'
import { Readable } from 'node:stream'
import Fastify, {
  type FastifyInstance,
  type FastifyReply,
  type FastifyServerOptions,
} from 'fastify'
import type { Redis } from 'ioredis'
import { ApiKeyVerifier } from './auth/api-keys.js'
import { registerAuth } from './auth/authenticate.js'
import { type Clock, systemClock } from './clock.js'
import type { Config } from './config.js'
import { ApiError, errorBody } from './errors.js'
import { registerCors } from './http/cors.js'
import { docsPage } from './http/docs-page.js'
import { restOfBodyDiscarded } from './http/early-answer.js'
import { edgeViolation, unsupportedContentEncoding } from './http/edge.js'
import { handleClientError, registerErrorHandling } from './http/error-handling.js'
import { createOriginOf, registerForwarding } from './http/forwarded.js'
import { frontDoor } from './http/front-door.js'
import { healthRoutes } from './http/health.js'
import { isAcceptedJsonCharset, parseJsonBody } from './http/json-body.js'
import { registerOpenApi } from './http/openapi.js'
import { requestId } from './http/request-id.js'
import { RequestLogController } from './http/request-log.js'
import { serializerCompiler } from './http/serialization.js'
import {
  closeConnectionAfterResponse,
  closeHttp2SessionsOnClose,
  type TlsMaterial,
  tlsServerOptions,
  transportHeaders,
} from './http/tls.js'
import { enforceHttp2Limits, Http2Bodies, http1Limits } from './http/transport-limits.js'
import { createValidatorCompiler } from './http/validation.js'
import './http/types.js'
import { Metrics } from './observability/metrics.js'
import { DeprecatedCallCounter, deprecationHeaders } from './pets/deprecation.js'
import {
  canServeHotPath,
  createHotPath,
  replayedBody,
  serveHotPathFirst,
  turnDataVersion,
} from './pets/hot-path.js'
import { MAX_CACHED_PAGES, MAX_CACHED_PETS, ReadCache } from './pets/read-cache.js'
import { petRoutes } from './pets/routes.js'
import { PetService } from './pets/service.js'
import { readDataVersion, type Store } from './storage/store.js'

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

export const BODY_LIMIT_BYTES = 64 * 1024
const IDEMPOTENCY_PURGE_INTERVAL_MS = 60 * 60 * 1000

export async function buildApp(deps: AppDependencies): Promise<FastifyInstance> {
  const { config, store } = deps
  const clock = deps.clock ?? systemClock
  if (config.rateLimitStore === 'redis' && !deps.redis) {
    throw new Error('rateLimitStore is redis but no Redis client was given to buildApp')
  }
  const transport = transportHeaders(deps.tls, config.hstsMaxAgeSeconds)
  const limits = {
    requestTimeoutMs: config.requestTimeoutMs,
    keepAliveTimeoutMs: config.keepAliveTimeoutMs,
  }
  // Node's own 400 for a missing Host has an empty body: the edge check answers that instead.
  const serverOptions = { ...http1Limits(limits), requireHostHeader: false }
  // Requests answered while their body was still arriving (a 413, a 401): a timeout of that body
  // ends the connection without a second answer.
  const answeredEarly = new WeakMap<Socket, IncomingMessage>()
  const isAnsweredEarly = (socket: Socket) => answeredEarly.get(socket)?.complete === false
  const app = Fastify({
    logger: deps.logger ?? false,
    logController: new RequestLogController(),
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
      handleClientError(error, socket, transport, isAnsweredEarly),
    frameworkErrors: (_error, request, rawReply) => {
      const reply = rawReply as FastifyReply
      reply
        .code(400)
        .headers({ 'x-request-id': request.id, 'cache-control': 'no-store', ...transport })
        // The framework's message repeats the whole URL, at any length: say what is wrong instead.
        .send(errorBody('invalid_request', 'the request URL is malformed'))
    },
    ...tlsServerOptions(deps.tls, serverOptions, limits),
  })
  // One rule for both doors: the routes read it through request.ip/host/protocol.
  const originOf = createOriginOf(config.trustProxy)
  registerForwarding(app, originOf)
  // HTTP/2 bodies late past the request timeout fail as they are read, so the routes answer 408.
  const http2Bodies = deps.tls?.http2 ? new Http2Bodies() : undefined
  if (http2Bodies !== undefined) {
    const server = app.server as unknown as Http2SecureServer
    enforceHttp2Limits(server, limits, (stream) => http2Bodies.stalled(stream))
    closeHttp2SessionsOnClose(app)
  }

  const compileValidator = createValidatorCompiler()
  app.setValidatorCompiler(compileValidator)
  app.setSerializerCompiler(serializerCompiler)
  // Only JSON bodies are accepted; every other media type is 415.
  app.removeAllContentTypeParsers()
  app.addContentTypeParser('application/json', { parseAs: 'buffer' }, (request, body, done) => {
    if (!isAcceptedJsonCharset(request.headers['content-type'] ?? '')) {
      done(new ApiError('unsupported_media_type', 'request body must be UTF-8 application/json'))
      return
    }
    try {
      done(null, parseJsonBody(body as Buffer))
    } catch (err) {
      done(err as Error)
    }
  })

  const isDraining = deps.isDraining ?? (() => false)
  registerErrorHandling(app, { isDraining })

  const deprecation = deprecationHeaders(config.deprecatedAt)
  app.decorateRequest('dataVersion', undefined)
  app.addHook('onRequest', async (request, reply) => {
    reply.header('x-request-id', request.id)
    reply.header('cache-control', 'no-store')
    reply.headers(transport)
    // While draining, each keep-alive connection serves one more request and then closes, so
    // clients reconnect to another instance instead of racing the listener's close.
    if (isDraining()) closeConnectionAfterResponse(request, reply)
    if (request.routeOptions.config.deprecated) reply.headers(deprecation)
    const violation = edgeViolation(request.raw)
    if (violation !== null) throw violation
    // Read once per request, before any cache is consulted: every cache the request consults is
    // checked against the same moment. Public routes consult none.
    if (request.routeOptions.config.public !== true) {
      request.dataVersion = turnDataVersion(request.raw) ?? (await readDataVersion(store))
    }
  })

  // Labels come from the route's operation name, never the URL, so their number stays small.
  const metrics = deps.metrics ?? new Metrics({ processMetrics: false })
  metrics.watchStore(store)
  app.addHook('onResponse', async (request, reply) => {
    const operation = request.routeOptions.config.operation ?? 'unknown'
    const labels = { operation, method: request.method, status: reply.statusCode }
    metrics.requestCompleted(labels, reply.elapsedTime / 1000)
    if (!request.raw.complete) answeredEarly.set(request.raw.socket, request.raw)
  })
  app.addHook('onSend', (request, reply, payload, done) => {
    const discarding = restOfBodyDiscarded(request.raw, reply.getHeader('connection'))
    if (discarding === undefined) done(null, payload)
    else discarding.then(() => done(null, payload))
  })

  await registerCors(app, config.corsOrigins)
  const hotAuth = await registerAuth(app, {
    verifier: new ApiKeyVerifier(store, clock, config.apiKeys),
    rateLimit: { max: config.rateLimitMax, windowMs: config.rateLimitWindowMs },
    authFailureLimit: { max: config.authFailureLimitMax, windowMs: config.authFailureWindowMs },
    onRateLimited: (policy) => metrics.rateLimitRejected(policy),
    ...(config.rateLimitStore === 'redis' ? { redis: deps.redis } : {}),
  })
  await registerOpenApi(app, { productionUrl: config.productionUrl, stagingUrl: config.stagingUrl })
  await app.register(docsPage, { specUrl: '/v1/openapi.json' })
  await app.register(frontDoor, { docsUrl: '/docs', specUrl: '/v1/openapi.json' })

  const service = new PetService(store, clock)
  const pages = new ReadCache(MAX_CACHED_PAGES)
  const pets = new ReadCache(MAX_CACHED_PETS)
  const deprecatedCalls = new DeprecatedCallCounter(clock, config.deprecatedCallLogIntervalMs)
  metrics.watchDeprecatedCalls(() => deprecatedCalls.counts())
  const fallbackOrigin = new URL(config.productionUrl).origin
  // HTTP/2 requests take other objects; counters in Redis cannot answer synchronously.
  const hot = config.hotPath && canServeHotPath(store) && !deps.tls?.http2 ? hotAuth : null
  app.addHook('preParsing', (request, _reply, payload, done) => {
    // After authentication, before a byte of the body is read.
    const refused = unsupportedContentEncoding(request.raw)
    if (refused !== null) {
      done(refused)
      return
    }
    if (http2Bodies !== undefined && request.raw.httpVersionMajor === 2) {
      done(null, http2Bodies.watch(request.raw as unknown as Http2ServerRequest))
      return
    }
    // A create the hot path read and then left to the routes comes with its body already taken
    // from the socket: Fastify's parser gets the bytes the hot path kept.
    const body = hot === null ? undefined : replayedBody(request.raw)
    done(null, body === undefined ? payload : Readable.from([body]))
  })
  await app.register(healthRoutes, { store, isDraining })
  await app.register(petRoutes, { service, clock, deprecatedCalls, fallbackOrigin, pages, pets })
  if (hot !== null) {
    const hotPath = createHotPath({
      auth: hot,
      compileValidator,
      store,
      pages,
      pets,
      service,
      bodyLimit: BODY_LIMIT_BYTES,
      logger: app.log,
      metrics,
      clock,
      deprecatedCalls,
      deprecation,
      transport,
      isDraining,
      varyOrigin: config.corsOrigins.length > 0,
      originOf,
      fallbackOrigin,
    })
    serveHotPathFirst(app.server as Server, hotPath)
  }

  const purge = () =>
    service.purgeExpiredIdempotencyKeys().catch((err) => app.log.warn({ err }, 'purge failed'))
  const purgeTimer = setInterval(purge, IDEMPOTENCY_PURGE_INTERVAL_MS).unref()
  app.addHook('onReady', async () => {
    await purge()
  })
  app.addHook('onClose', async () => clearInterval(purgeTimer))
  return app
}
