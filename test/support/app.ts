// Builds a fresh app on a fresh SQLite file for one test, with one API key, and cleans up after.
import { mkdtempSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import type { TestContext } from 'node:test'
import type { FastifyInstance, InjectOptions, LightMyRequestResponse } from 'fastify'
import { buildApp } from '../../src/app.js'
import { createApiKey } from '../../src/auth/api-keys.js'
import { type Clock, manualClock } from '../../src/clock.js'
import { type Config, configWith } from '../../src/config.js'
import { openPostgresStore } from '../../src/storage/postgres/postgres-store.js'
import { openSqliteStore } from '../../src/storage/sqlite/sqlite-store.js'
import type { Store } from '../../src/storage/store.js'
import { freshPostgresUrl, TEST_STORE } from './postgres.js'

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
}

export interface TestAppOptions {
  config?: Partial<Config>
  now?: Date
  /** Wraps the store the app sees, e.g. to hold a create in flight. */
  wrapStore?: (store: Store) => Store
  clock?: Clock
}

export function tempDir(t: TestContext, prefix = 'petstore-test-'): string {
  const dir = mkdtempSync(join(tmpdir(), prefix))
  t.after(() => rmSync(dir, { recursive: true, force: true }))
  return dir
}

/** A fresh, empty store of the kind this run tests (see TEST_STORE), closed after `t`. */
export async function testStore(
  t: TestContext,
  dir = tempDir(t),
  settings: Partial<Pick<Config, 'idempotencyKeysPerApiKey'>> = {},
): Promise<Store> {
  const store =
    TEST_STORE === 'postgres'
      ? await openPostgresStore({
          url: await freshPostgresUrl(t),
          poolSize: 5,
          timeoutMs: 5000,
          ...settings,
        })
      : await openSqliteStore(join(dir, 'petstore.db'), settings)
  t.after(() => store.close())
  return store
}

export async function testApp(t: TestContext, opts: TestAppOptions = {}): Promise<TestApp> {
  const dir = tempDir(t)
  const config = configWith(opts.config)
  const store = await testStore(t, dir, {
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
  const call = (o: InjectOptions) =>
    app.inject({ ...o, headers: { authorization: `Bearer ${key}`, ...o.headers } })
  return { app, store, clock, config, key, keyId: record.id, dir, call }
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
