// An app listening on a real socket on a fresh store, with its log lines and metrics at hand.
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

export interface Served extends ServedApp {
  /** A valid API key of the app's store. */
  key: string
  store: Store
  /** Another connection to the store's database (TestApp's `sql`). */
  sql: TestApp['sql']
  clock: ReturnType<typeof manualClock>
  /** What the app's isDraining answers: set `on` to drain it. */
  draining: { on: boolean }
}

/**
 * Builds the app with `config` on a fresh store; `extend` may add routes before it listens (a
 * route that reports what Fastify's request says, for instance).
 */
export async function servedApp(
  t: TestContext,
  config: Partial<Config> = {},
  extend: (app: FastifyInstance) => void = () => {},
): Promise<Served> {
  const { store, sql } = await openTestStore(t, tempDir(t), {})
  const clock = manualClock(new Date('2026-01-15T12:00:00Z'))
  const { key } = await createApiKey(store, clock, 'test-key')
  const draining = { on: false }
  const logs: string[] = []
  const metrics = new Metrics({ processMetrics: false })
  const app = await buildApp({
    config: configWith(config),
    store,
    clock,
    metrics,
    isDraining: () => draining.on,
    logger: { level: 'info', stream: { write: (line: string) => logs.push(line) } },
  })
  extend(app)
  await app.listen({ port: 0, host: '127.0.0.1' })
  t.after(() => app.close())
  const port = (app.server.address() as AddressInfo).port
  return { app, port, logs, metrics, key, store, sql, clock, draining }
}

/** The `request completed` lines the app logged from line `from` on, parsed. */
export function completedLines(served: ServedApp, from = 0): Record<string, unknown>[] {
  return served.logs
    .slice(from)
    .map((line) => JSON.parse(line) as Record<string, unknown>)
    .filter((line) => line.msg === 'request completed')
}
