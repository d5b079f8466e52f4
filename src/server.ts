// Runs the service: config → storage → app → listen; SIGTERM and SIGINT drain and exit 0.
import { open, rm } from 'node:fs/promises'
import { dirname, join, resolve } from 'node:path'
import { setTimeout as sleep } from 'node:timers/promises'
import type { FastifyInstance } from 'fastify'
import type { Redis } from 'ioredis'
import { buildApp } from './app.js'
import { createApiKey, generateApiKey } from './auth/api-keys.js'
import { openRedis } from './auth/redis.js'
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
  /** This process's figures; a cluster worker hands them to the primary, which serves them. */
  metrics: Metrics
  /**
   * Drains: readiness turns 503 at once while requests are still served for the drain delay
   * (config.drainDelayMs unless given), then the listener closes, in-flight requests finish, and
   * storage closes.
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

/** Where the bootstrap key is written when there is no terminal to show it on. */
export function bootstrapKeyPath(config: Pick<Config, 'bootstrapKeyFile' | 'databaseUrl'>): string {
  if (config.bootstrapKeyFile !== null) return resolve(config.bootstrapKeyFile)
  const sqlitePath = config.databaseUrl.startsWith('sqlite:')
    ? config.databaseUrl.slice('sqlite:'.length)
    : ':memory:'
  return sqlitePath === ':memory:'
    ? resolve('bootstrap-key')
    : join(dirname(resolve(sqlitePath)), 'bootstrap-key')
}

/**
 * Writes `text` to a new file only this user can read, durably. An existing file, or a link in
 * its place, is never followed or overwritten.
 */
async function writeSecretFile(path: string, text: string): Promise<void> {
  let file: Awaited<ReturnType<typeof open>>
  try {
    file = await open(path, 'wx', 0o600)
  } catch (err) {
    const code = (err as NodeJS.ErrnoException).code
    if (code === 'EEXIST') {
      throw new Error(
        `${path} already exists: a bootstrap key is only written to a new file; remove it (its key belongs to an earlier database) or set PETSTORE_BOOTSTRAP_KEY_FILE`,
      )
    }
    throw new Error(
      `cannot write the bootstrap key to ${path} (${code ?? (err as Error).message}); set PETSTORE_BOOTSTRAP_KEY_FILE, or create a key first with \`petstore keys create\``,
    )
  }
  try {
    await file.writeFile(text)
    await file.sync()
  } catch (err) {
    await file.close()
    await rm(path, { force: true })
    throw err
  }
  await file.close()
}

/**
 * First start with no key at all: make one, show it once, keep only its hash. On a terminal it is
 * printed. Otherwise stdout is a log that others collect and keep, so the key goes to a new file
 * that only the service's user can read, and only the file's path is printed.
 */
export async function ensureBootstrapKey(
  config: Config,
  store: Store,
  clock: Clock,
  out: NodeJS.WritableStream,
) {
  if (config.apiKeys.length > 0 || (await store.countApiKeys()) > 0) return
  if ((out as Partial<NodeJS.WriteStream>).isTTY !== true) {
    const { key, record } = generateApiKey('bootstrap', clock.now(), null)
    const path = bootstrapKeyPath(config)
    // The file first: a key stored but never written would be lost, and no other made.
    await writeSecretFile(path, `${key}\n`)
    try {
      await store.insertApiKey(record)
    } catch (err) {
      await rm(path, { force: true })
      throw err
    }
    out.write(
      `petstore: no API key existed, so one was created (id ${record.id}); the bootstrap API key was written to ${path}, readable only by this user\n`,
    )
    return
  }
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
  let redis: Redis | undefined
  try {
    await ensureBootstrapKey(config, store, clock, out)
    if (config.rateLimitStore === 'redis') redis = await openRedis(config.redisUrl, process.stderr)
    app = await buildApp({
      config,
      store,
      clock,
      isDraining: () => draining,
      tls,
      logger: loggerOptions(config),
      metrics,
      ...(redis ? { redis } : {}),
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
    redis?.disconnect()
    await store.close()
    throw err
  }
  const addr = app.server.address()
  const address =
    typeof addr === 'string' || addr === null
      ? String(addr)
      : `${tls ? 'https' : 'http'}://${addr.family === 'IPv6' ? `[${addr.address}]` : addr.address}:${addr.port}`
  out.write(`${LISTENING_BANNER} ${address} (store: ${store.kind})\n`)
  const metricsUrl = metricsServer?.url ?? null
  if (metricsUrl !== null) out.write(`${METRICS_BANNER} ${metricsUrl}\n`)

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
      // A keep-alive connection whose request was in flight when the listener closed goes idle
      // only afterwards, and would hold the close open until the timeout: it is closed as soon
      // as it is idle (a request pipelined behind the last one is still answered first).
      const server = app.server
      const idleSweep =
        'closeIdleConnections' in server
          ? setInterval(() => server.closeIdleConnections(), IDLE_SWEEP_MS)
          : undefined
      await Promise.race([app.close(), timeout])
      clearInterval(idleSweep)
      // Scrapes go on through the drain, so its last figures can be seen; then they stop too.
      await metricsServer?.close()
      // The app has closed, so no counter is being updated any more.
      redis?.disconnect()
      await store.close()
    })()
    return stopping
  }
  return { app, store, address, metricsUrl, metrics, stop }
}
