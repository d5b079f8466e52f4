// Runs the service: config → storage → app → listen; SIGTERM and SIGINT drain and exit 0.
import { setTimeout as sleep } from 'node:timers/promises'
import type { FastifyInstance } from 'fastify'
import { buildApp } from './app.js'
import { createApiKey } from './auth/api-keys.js'
import { type Clock, clockStartingAt, systemClock } from './clock.js'
import type { Config } from './config.js'
import { loadTls } from './http/tls.js'
import { loggerOptions } from './observability/logging.js'
import { Metrics } from './observability/metrics.js'
import { type MetricsServer, startMetricsServer } from './observability/metrics-server.js'
import { openStore } from './storage/open-store.js'
import type { Store } from './storage/store.js'

export interface RunningServer {
  app: FastifyInstance
  store: Store
  address: string
  /** Where Prometheus scrapes, e.g. `http://127.0.0.1:9464/metrics`; null when metrics are off. */
  metricsUrl: string | null
  /**
   * Drains: readiness turns 503 at once while requests are still served for the drain delay
   * (config.drainDelayMs unless given), then the listener closes, in-flight requests finish, and
   * storage closes.
   */
  stop(opts?: { drainDelayMs?: number }): Promise<void>
}

export function clockFor(config: Config): Clock {
  return config.now ? clockStartingAt(config.now) : systemClock
}

/** First start with no key at all: make one, show it once, keep only its hash. */
async function ensureBootstrapKey(
  config: Config,
  store: Store,
  clock: Clock,
  out: NodeJS.WritableStream,
) {
  if (config.apiKeys.length > 0 || (await store.countApiKeys()) > 0) return
  const { key, record } = await createApiKey(store, clock, 'bootstrap')
  out.write(
    [
      '',
      '================================================================',
      ' No API key existed, so one was created. It is shown only now:',
      '',
      `   ${key}`,
      '',
      ` Key id: ${record.id}. Manage keys with \`petstore keys\`.`,
      '================================================================',
      '',
    ].join('\n'),
  )
}

export async function startServer(
  config: Config,
  out: NodeJS.WritableStream,
): Promise<RunningServer> {
  const clock = clockFor(config)
  // Read before storage opens, so an unusable certificate stops the start with nothing to undo.
  const tls = loadTls(config)
  const store = await openStore(config, (err) =>
    process.stderr.write(`petstore: database connection error: ${err.message}\n`),
  )
  let draining = false
  let app: FastifyInstance
  const metrics = new Metrics()
  let metricsServer: MetricsServer | null = null
  try {
    await ensureBootstrapKey(config, store, clock, out)
    app = await buildApp({
      config,
      store,
      clock,
      isDraining: () => draining,
      tls,
      logger: loggerOptions(config),
      metrics,
    })
    // Metrics first: a port clash there stops the start before the API takes any traffic.
    if (config.metricsPort !== null) {
      metricsServer = await startMetricsServer(
        metrics.registry,
        config.metricsHost,
        config.metricsPort,
      )
    }
    await app.listen({ port: config.port, host: config.host })
  } catch (err) {
    await metricsServer?.close()
    await store.close()
    throw err
  }
  const addr = app.server.address()
  const address =
    typeof addr === 'string' || addr === null
      ? String(addr)
      : `${tls ? 'https' : 'http'}://${addr.family === 'IPv6' ? `[${addr.address}]` : addr.address}:${addr.port}`
  out.write(`petstore listening on ${address} (store: ${store.kind})\n`)
  const metricsUrl = metricsServer?.url ?? null
  if (metricsUrl !== null) out.write(`petstore metrics on ${metricsUrl}\n`)

  let stopping: Promise<void> | undefined
  const stop = (opts: { drainDelayMs?: number } = {}) => {
    stopping ??= (async () => {
      draining = true
      // Closing the listener at once would also drop idle keep-alive connections, so a load
      // balancer would never see readiness turn 503; it gets this long to notice and move away.
      await sleep(opts.drainDelayMs ?? config.drainDelayMs)
      const timeout = new Promise<void>((resolve) =>
        setTimeout(resolve, config.shutdownTimeoutMs).unref(),
      )
      await Promise.race([app.close(), timeout])
      // Scrapes go on through the drain, so its last figures can be seen; then they stop too.
      await metricsServer?.close()
      await store.close()
    })()
    return stopping
  }
  return { app, store, address, metricsUrl, stop }
}
