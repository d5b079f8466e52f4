// Runs the service: config → storage → app → listen; SIGTERM and SIGINT drain and exit 0.
import { setTimeout as sleep } from 'node:timers/promises'
import type { FastifyInstance } from 'fastify'
import type { Redis } from 'ioredis'
import { buildApp } from './app.js'
import { openRedis } from './auth/redis.js'
import { ensureBootstrapKey } from './bootstrap-key.js'
import { type Clock, clockStartingAt, systemClock } from './clock.js'
import type { Config } from './config.js'
import { watchFileDescriptors } from './http/file-descriptors.js'
import { loadTls, type TlsMaterial } from './http/tls.js'
import { loggerOptions } from './observability/logging.js'
import { Metrics } from './observability/metrics.js'
import { type MetricsServer, startMetricsServer } from './observability/metrics-server.js'
import { openStore } from './storage/open-store.js'
import type { Store } from './storage/store.js'

export { bootstrapKeyPath, ensureBootstrapKey } from './bootstrap-key.js'

export interface RunningServer {
  app: FastifyInstance
  store: Store
  address: string
  /** Where Prometheus scrapes, e.g. `http://127.0.0.1:9464/metrics`; null when metrics are off. */
  metricsUrl: string | null
  /** This process's figures; a cluster worker hands them to the primary, which serves them. */
  metrics: Metrics
  /**
   * Drains: readiness turns 503 at once, requests are still served for the drain delay
   * (config.drainDelayMs unless given), then in-flight requests finish and storage closes.
   */
  stop(opts?: { drainDelayMs?: number }): Promise<void>
}

/** How the start-up lines begin, the API's and the metrics listener's, each before its URL. */
export const LISTENING_BANNER = 'petstore listening on'
export const METRICS_BANNER = 'petstore metrics on'

/** How often a closing server looks for connections that have gone idle, to close them. */
const IDLE_SWEEP_MS = 50

export function clockFor(config: Config): Clock {
  return config.now ? clockStartingAt(config.now) : systemClock
}

/** What runs on top of the store, each closed in turn by a drain. */
interface Services {
  app: FastifyInstance
  metricsServer: MetricsServer | null
  redis: Redis | undefined
}

interface StartContext {
  config: Config
  store: Store
  clock: Clock
  tls: TlsMaterial | undefined
  metrics: Metrics
  isDraining: () => boolean
  out: NodeJS.WritableStream
}

/** Opens everything on top of the store and listens; on failure, closes what it opened. */
async function openServices(ctx: StartContext): Promise<Services> {
  const { config, store } = ctx
  let metricsServer: MetricsServer | null = null
  let redis: Redis | undefined
  try {
    await ensureBootstrapKey(config, store, ctx.clock, ctx.out)
    if (config.rateLimitStore === 'redis') redis = await openRedis(config.redisUrl, process.stderr)
    const app = await buildApp({
      config,
      store,
      clock: ctx.clock,
      isDraining: ctx.isDraining,
      tls: ctx.tls,
      logger: loggerOptions(config),
      metrics: ctx.metrics,
      ...(redis ? { redis } : {}),
    })
    // Metrics first: a port clash there stops the start before the API takes any traffic.
    if (config.metricsPort !== null) {
      metricsServer = await startMetricsServer(
        ctx.metrics.registry,
        config.metricsHost,
        config.metricsPort,
      )
    }
    await app.listen({ port: config.port, host: config.host }).catch((err: Error) => {
      throw new Error(
        `the API cannot listen on ${config.host}:${config.port} (${err.message}); set PORT to another port`,
        { cause: err },
      )
    })
    watchFileDescriptors(app.server, {
      log: app.log,
      refused: () => ctx.metrics.connectionRefused(),
      storageConnections: store.kind === 'postgres' ? config.databasePoolSize : 0,
    })
    return { app, metricsServer, redis }
  } catch (err) {
    await metricsServer?.close()
    redis?.disconnect()
    await store.close()
    throw err
  }
}

/** The URL the API listens on, as the start-up line shows it. */
function listeningAddress(app: FastifyInstance, tls: TlsMaterial | undefined): string {
  const addr = app.server.address()
  if (typeof addr === 'string' || addr === null) return String(addr)
  const host = addr.family === 'IPv6' ? `[${addr.address}]` : addr.address
  return `${tls ? 'https' : 'http'}://${host}:${addr.port}`
}

/** The drain once readiness answers 503: wait, close the app, then what it used. */
async function drain(
  config: Config,
  store: Store,
  { app, metricsServer, redis }: Services,
  delayMs: number,
): Promise<void> {
  // Closing the listener at once would also drop idle keep-alive connections, so a load
  // balancer would never see readiness turn 503; it gets this long to notice and move away.
  await sleep(delayMs)
  // A keep-alive connection busy when the listener closed would hold the close open until the
  // timeout: it is closed once idle (a request pipelined behind the last is still answered).
  const server = app.server
  const idleSweep =
    'closeIdleConnections' in server
      ? setInterval(() => server.closeIdleConnections(), IDLE_SWEEP_MS)
      : undefined
  await Promise.race([app.close(), sleep(config.shutdownTimeoutMs, undefined, { ref: false })])
  clearInterval(idleSweep)
  // Scrapes go on through the drain, so its last figures can be seen.
  await metricsServer?.close()
  redis?.disconnect()
  await store.close()
}

export async function startServer(
  config: Config,
  out: NodeJS.WritableStream,
): Promise<RunningServer> {
  const clock = clockFor(config)
  // Read before storage opens, so an unusable certificate stops the start with nothing to undo.
  const tls = loadTls(config)
  const { store } = await openStore(config, (err) =>
    process.stderr.write(`petstore: database connection error: ${err.message}\n`),
  )
  let draining = false
  const metrics = new Metrics()
  const isDraining = () => draining
  const services = await openServices({ config, store, clock, tls, metrics, isDraining, out })
  const address = listeningAddress(services.app, tls)
  out.write(`${LISTENING_BANNER} ${address} (store: ${store.kind})\n`)
  const metricsUrl = services.metricsServer?.url ?? null
  if (metricsUrl !== null) out.write(`${METRICS_BANNER} ${metricsUrl}\n`)

  let stopping: Promise<void> | undefined
  const stop = (opts: { drainDelayMs?: number } = {}) => {
    if (stopping === undefined) {
      draining = true
      stopping = drain(config, store, services, opts.drainDelayMs ?? config.drainDelayMs)
    }
    return stopping
  }
  return { app: services.app, store, address, metricsUrl, metrics, stop }
}
