// The fast lane and the routes side by side: two apps on one store, one with the fast lane and one
// without (PETSTORE_HOT_PATH=false), listening on real sockets, each with its log lines and
// metrics, so that a test can send both the same request and compare the answers.
import type { AddressInfo } from 'node:net'
import type { TestContext } from 'node:test'
import type { FastifyInstance } from 'fastify'
import { buildApp } from '../../src/app.js'
import { createApiKey } from '../../src/auth/api-keys.js'
import { manualClock } from '../../src/clock.js'
import { type Config, configWith } from '../../src/config.js'
import { Metrics } from '../../src/observability/metrics.js'
import type { Store } from '../../src/storage/store.js'
import { openTestStore, type TestApp, tempDir } from './app.js'

export interface ServedApp {
  app: FastifyInstance
  port: number
  /** Every log line the app wrote, JSON, in order. */
  logs: string[]
  metrics: Metrics
}

export interface LaneAndRoutes {
  hot: ServedApp
  plain: ServedApp
  /** A valid API key of the shared store. */
  key: string
  store: Store
  /** Another connection to the store's database (TestApp's `sql`). */
  sql: TestApp['sql']
  clock: ReturnType<typeof manualClock>
  /** What both apps' isDraining answers: set `on` to drain them. */
  draining: { on: boolean }
}

/**
 * Builds both apps with `config`; `extend` may add routes to each before it listens (a route
 * that reports what Fastify's request says, for instance).
 */
export async function laneAndRoutes(
  t: TestContext,
  config: Partial<Config> = {},
  extend: (app: FastifyInstance) => void = () => {},
): Promise<LaneAndRoutes> {
  const { store, sameTurnReads, sql } = await openTestStore(t, tempDir(t), {})
  const clock = manualClock(new Date('2026-01-15T12:00:00Z'))
  const { key } = await createApiKey(store, clock, 'test-key')
  const draining = { on: false }
  const open = async (hotPath: boolean): Promise<ServedApp> => {
    const logs: string[] = []
    const metrics = new Metrics({ processMetrics: false })
    const app = await buildApp({
      config: configWith({ ...config, hotPath }),
      store,
      sameTurnReads,
      clock,
      metrics,
      isDraining: () => draining.on,
      logger: { level: 'info', stream: { write: (line: string) => logs.push(line) } },
    })
    extend(app)
    await app.listen({ port: 0, host: '127.0.0.1' })
    t.after(() => app.close())
    return { app, port: (app.server.address() as AddressInfo).port, logs, metrics }
  }
  return { hot: await open(true), plain: await open(false), key, store, sql, clock, draining }
}

/** How many answers the app's fast lane has given. */
export async function hotAnswers(served: ServedApp): Promise<number> {
  const text = await served.metrics.registry.getSingleMetricAsString(
    'petstore_http_hot_path_answers_total',
  )
  return Number(/ (\d+)$/m.exec(text)![1])
}

/** The `request completed` lines the app logged from line `from` on, parsed. */
export function completedLines(served: ServedApp, from = 0): Record<string, unknown>[] {
  return served.logs
    .slice(from)
    .map((line) => JSON.parse(line) as Record<string, unknown>)
    .filter((line) => line.msg === 'request completed')
}
