// Builds a fresh app on a fresh store for one test, with one API key, and cleans up after.
import { join } from 'node:path'
import type { TestContext } from 'node:test'
import type { FastifyInstance, InjectOptions, LightMyRequestResponse } from 'fastify'
import pg from 'pg'
import { buildApp } from '../../src/app.js'
import { createApiKey } from '../../src/auth/api-keys.js'
import { type Clock, manualClock } from '../../src/clock.js'
import { type Config, configWith } from '../../src/config.js'
import { openPostgresStore } from '../../src/storage/postgres/postgres-store.js'
import { Database } from '../../src/storage/sqlite/driver.js'
import { openSqliteStore } from '../../src/storage/sqlite/sqlite-store.js'
import type { Store } from '../../src/storage/store.js'
import { Conformance } from './conformance.js'
import { freshPostgresUrl, TEST_STORE } from './postgres.js'
import { tempDir } from './workspace.js'

export interface TestApp {
  app: FastifyInstance
  store: Store
  clock: ReturnType<typeof manualClock>
  config: Config
  /** A valid API key for the requests. */
  key: string
  keyId: string
  dir: string
  /** inject with the test key's Authorization header already set. */
  call(opts: InjectOptions): Promise<LightMyRequestResponse>
  /**
   * Runs one SQL statement (`?` placeholders) on a connection of its own to the app's database,
   * standing for another process (a CLI, another instance); closed after the test.
   */
  sql(text: string, ...values: unknown[]): Promise<void>
}

export interface TestAppOptions {
  config?: Partial<Config>
  now?: Date
  /** Wraps the store the app sees, e.g. to hold a create in flight. */
  wrapStore?: (store: Store) => Store
  clock?: Clock
}

export { tempDir }

/** A fresh, empty store of the kind this run tests (see TEST_STORE), closed after `t`. */
export async function testStore(
  t: TestContext,
  dir = tempDir(t),
  settings: Partial<Pick<Config, 'idempotencyKeysPerApiKey'>> = {},
): Promise<Store> {
  return (await openTestStore(t, dir, settings)).store
}

/** What openTestStore opens: the store and a `sql` function. */
export interface OpenedTestStore {
  store: Store
  sql: TestApp['sql']
}

/** testStore, with a `sql` function for another connection to the store's database. */
export async function openTestStore(
  t: TestContext,
  dir: string,
  settings: Partial<Pick<Config, 'idempotencyKeysPerApiKey'>>,
): Promise<OpenedTestStore> {
  let opened: OpenedTestStore
  if (TEST_STORE === 'postgres') {
    const url = await freshPostgresUrl(t)
    const store = await openPostgresStore({ url, poolSize: 5, timeoutMs: 5000, ...settings })
    const sql = async (text: string, ...values: unknown[]) => {
      let n = 0
      const client = new pg.Client({ connectionString: url })
      await client.connect()
      try {
        await client.query(
          text.replace(/\?/g, () => `$${++n}`),
          values,
        )
      } finally {
        await client.end()
      }
    }
    opened = { store, sql }
  } else {
    const file = join(dir, 'petstore.db')
    const store = await openSqliteStore(file, settings)
    const sql = async (text: string, ...values: unknown[]) => {
      const db = new Database(file)
      try {
        db.pragma('busy_timeout = 5000')
        db.prepare(text).run(...values)
      } finally {
        db.close()
      }
    }
    opened = { store, sql }
  }
  t.after(() => opened.store.close())
  return opened
}

export async function testApp(t: TestContext, opts: TestAppOptions = {}): Promise<TestApp> {
  const dir = tempDir(t)
  const config = configWith(opts.config)
  const { store, sql } = await openTestStore(t, dir, {
    idempotencyKeysPerApiKey: config.idempotencyKeysPerApiKey,
  })
  const clock = manualClock(opts.now ?? new Date('2026-01-15T12:00:00Z'))
  const { key, record } = await createApiKey(store, clock, 'test-key')
  const app = await buildApp({
    config,
    store: opts.wrapStore ? opts.wrapStore(store) : store,
    clock: opts.clock ?? clock,
  })
  await app.ready()
  t.after(() => app.close())
  await checkEveryResponse(app)
  const call = (o: InjectOptions) =>
    app.inject({ ...o, headers: { authorization: `Bearer ${key}`, ...o.headers } })
  return { app, store, clock, config, key, keyId: record.id, dir, call, sql }
}

const checkers = new Map<string, Conformance>()

/** Makes `app.inject` check each response against the document the app serves. */
async function checkEveryResponse(app: FastifyInstance): Promise<void> {
  const doc = (await app.inject({ method: 'GET', url: '/v1/openapi.json' })).body
  let checker = checkers.get(doc)
  if (checker === undefined) {
    checker = new Conformance(JSON.parse(doc))
    checkers.set(doc, checker)
  }
  const inject = app.inject.bind(app)
  const checked = checker.wrap((o) => inject(o))
  app.inject = ((o?: InjectOptions | string) =>
    typeof o === 'object' ? checked(o) : inject(o as never)) as typeof app.inject
}

export function json(res: LightMyRequestResponse): unknown {
  return JSON.parse(res.body)
}

export async function createPet(
  t: TestApp,
  body: Record<string, unknown> | string,
): Promise<LightMyRequestResponse> {
  return t.call({
    method: 'POST',
    url: '/v1/pets',
    headers: { 'content-type': 'application/json' },
    payload: typeof body === 'string' ? body : JSON.stringify(body),
  })
}
