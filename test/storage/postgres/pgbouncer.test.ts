// The service behind a stock PgBouncer in transaction pooling mode, started by the test with fewer
// server connections than clients, so that consecutive transactions of one client run on
// different server connections: nothing may rely on state kept by a server connection (named
// statements, session settings, session locks). Each test has a database of its own: PgBouncer
// refuses the `options` startup parameter that gives the other tests a schema each.
import assert from 'node:assert/strict'
import { execFile } from 'node:child_process'
import { type TestContext, test } from 'node:test'
import { fileURLToPath } from 'node:url'
import { promisify } from 'node:util'
import pg from 'pg'
import { preparePostgres } from '../../../src/storage/postgres/migrate.js'
import { PET_INSERT_LOCK } from '../../../src/storage/postgres/migrations.js'
import { openPostgresStore } from '../../../src/storage/postgres/postgres-store.js'
import { call, listAllPets, type Pet, type Reply } from '../../support/api.js'
import { type OwnPgBouncer, startPgBouncer } from '../../support/pgbouncer.js'
import { adminQuery, freshPostgresDatabase, POSTGRES_ADMIN_URL } from '../../support/postgres.js'
import { baseEnv, type StartedService, spawnService, startService } from '../../support/process.js'
import { forStore } from '../../support/stores.js'
import { until } from '../../support/wait.js'
import { storeContract } from '../store-contract.js'
import { assertUnavailableReply as assertUnavailable, MIGRATIONS } from './expected.js'

const MAIN = fileURLToPath(new URL('../../../dist/main.js', import.meta.url))
const run = promisify(execFile)

/** A database of the test's own, its URL through PgBouncer, and a direct one for the test. */
async function databaseThrough(t: TestContext, bouncer: OwnPgBouncer) {
  const db = await freshPostgresDatabase(t)
  return { name: db.name, direct: db.url, url: bouncer.through(db.url) }
}

/** Advisory locks held in `database`, by anyone. */
async function advisoryLocks(database: string): Promise<number> {
  const { rows } = await adminQuery<{ n: number }>(
    `SELECT count(*)::int AS n FROM pg_locks l JOIN pg_database d ON d.oid = l.database
     WHERE l.locktype = 'advisory' AND d.datname = $1`,
    [database],
  )
  return rows[0]!.n
}

/** A session of the test's own on the database itself, not through PgBouncer. */
async function directClient(t: TestContext, url: string): Promise<pg.Client> {
  const client = new pg.Client({ connectionString: url })
  client.on('error', () => undefined)
  await client.connect()
  t.after(() => client.end())
  return client
}

forStore('postgres', () => {
  // Two server connections for four pooled clients: each transaction lands on either.
  storeContract('postgres through PgBouncer', async (t, opts) => {
    const bouncer = await startPgBouncer(t, { server: POSTGRES_ADMIN_URL, defaultPoolSize: 2 })
    const { url } = await databaseThrough(t, bouncer)
    const store = await openPostgresStore({ url, poolSize: 4, timeoutMs: 5000, ...opts })
    t.after(() => store.close())
    return store
  })

  test('a pooler is told from a direct connection: statements are named only on a direct one', async (t) => {
    const bouncer = await startPgBouncer(t, { server: POSTGRES_ADMIN_URL })
    const db = await databaseThrough(t, bouncer)
    const prepare = (url: string) => preparePostgres({ url, poolSize: 1, timeoutMs: 5000 })
    assert.deepEqual(await prepare(db.direct), { migrated: MIGRATIONS, pooled: false })
    assert.deepEqual(await prepare(db.url), { migrated: [], pooled: true })
  })

  test('stores starting together through PgBouncer apply each migration once and leave no lock held', async (t) => {
    const bouncer = await startPgBouncer(t, { server: POSTGRES_ADMIN_URL, defaultPoolSize: 2 })
    const db = await databaseThrough(t, bouncer)
    const stores = await Promise.all(
      Array.from({ length: 6 }, () =>
        openPostgresStore({ url: db.url, poolSize: 1, timeoutMs: 5000 }),
      ),
    )
    t.after(() => Promise.all(stores.map((s) => s.close())))
    const { rows } = await adminQuery<{ n: number }>(
      `SELECT count(*)::int AS n FROM pg_stat_activity WHERE datname = $1`,
      [db.name],
    )
    assert.ok(rows[0]!.n <= 2, `${rows[0]!.n} server connections`)
    const client = await directClient(t, db.direct)
    const applied = await client.query('SELECT name FROM kysely_migration ORDER BY name')
    const names = applied.rows.map((r) => r.name)
    assert.deepEqual(names, MIGRATIONS)
    // A session lock would stay behind on the server connection PgBouncer gave its statement to.
    assert.equal(await advisoryLocks(db.name), 0)
    // And the next start, on whichever server connection, is not kept waiting.
    const later = await openPostgresStore({ url: db.url, poolSize: 1, timeoutMs: 2000 })
    await later.close()
  })

  test('a start through PgBouncer waits for the migration lock inside its transaction', async (t) => {
    const bouncer = await startPgBouncer(t, { server: POSTGRES_ADMIN_URL, defaultPoolSize: 2 })
    const db = await databaseThrough(t, bouncer)
    await preparePostgres({ url: db.url, poolSize: 1, timeoutMs: 5000 })
    // Another instance migrating: Kysely's lock id, held on a direct connection.
    const holder = await directClient(t, db.direct)
    await holder.query('SELECT pg_advisory_lock(3853314791062309107)')
    const opening = openPostgresStore({ url: db.url, poolSize: 1, timeoutMs: 5000 })
    const waitingQueries = async () => {
      const { rows } = await adminQuery<{ query: string }>(
        `SELECT query FROM pg_stat_activity WHERE datname = $1 AND wait_event = 'advisory'`,
        [db.name],
      )
      return rows.map((r) => r.query)
    }
    await until(
      'the start waits for the migration lock',
      async () => (await waitingQueries()).length > 0,
    )
    // Read again: pg_stat_activity reads a wait live but a query from a snapshot, so the read that
    // first sees the wait can still show the statement before it.
    const waiting = await waitingQueries()
    // A session lock would outlive the statement on a server connection that PgBouncer then gives
    // to other clients, while its release could reach another one.
    assert.equal(waiting.length, 1)
    assert.match(waiting[0]!, /^BEGIN; .*SELECT pg_advisory_xact_lock\(3853314791062309107\)$/)
    await holder.query('SELECT pg_advisory_unlock(3853314791062309107)')
    const store = await opening
    await store.close()
    assert.equal(await advisoryLocks(db.name), 0)
  })

  // ---------------------------------------------------------------- the real service

  const TIMEOUT_MS = 2000

  function settings(url: string): Record<string, string> {
    return {
      PETSTORE_DATABASE_URL: url,
      PETSTORE_DATABASE_POOL_SIZE: '4',
      PETSTORE_DATABASE_TIMEOUT: `${TIMEOUT_MS}ms`,
      PETSTORE_RATE_LIMIT_STORE: 'memory',
      PETSTORE_RATE_LIMIT_MAX: '100000000',
      PETSTORE_AUTH_FAILURE_LIMIT_MAX: '100000000',
      PETSTORE_LOG_LEVEL: 'warn',
    }
  }

  /** `petstore keys create` through PgBouncer, as an operator runs it next to the instances. */
  async function createKey(url: string, name: string): Promise<string> {
    const { stdout } = await run(process.execPath, [MAIN, 'keys', 'create', '--name', name], {
      env: { ...baseEnv(), PETSTORE_METRICS_PORT: 'off', ...settings(url) },
    })
    const key = /^(pet_[0-9a-f]{12}_[A-Za-z0-9_-]{43})$/m.exec(stdout)?.[1]
    assert.ok(key, stdout)
    return key
  }

  function post(instance: StartedService, key: string, body: Omit<Pet, 'id'>, headers = {}) {
    const request = { method: 'POST', path: '/v1/pets', key, body: JSON.stringify(body), headers }
    return call(instance.port, request)
  }

  /** A 201 with exactly the pet asked for; the pet. */
  function created(reply: Reply, body: Omit<Pet, 'id'>): Pet {
    assert.equal(reply.status, 201, reply.body)
    const pet = JSON.parse(reply.body) as Pet
    assert.deepEqual(pet, { id: pet.id, ...body })
    return pet
  }

  /** Backends of `database` waiting for a lock. */
  async function lockWaiters(database: string): Promise<number> {
    const { rows } = await adminQuery<{ n: number }>(
      `SELECT count(*)::int AS n FROM pg_stat_activity
     WHERE datname = $1 AND wait_event_type = 'Lock'`,
      [database],
    )
    return rows[0]!.n
  }

  test('three instances through one PgBouncer with fewer server connections than their pools', async (t) => {
    // 3 instances × 4 pooled connections, and the CLI, onto 3 server connections.
    const bouncer = await startPgBouncer(t, { server: POSTGRES_ADMIN_URL, defaultPoolSize: 3 })
    const db = await databaseThrough(t, bouncer)
    const instances = await Promise.all(
      [0, 1, 2].map(() => startService(t, { env: settings(db.url) })),
    )
    const key = await createKey(db.url, 'through-pgbouncer')

    // A key made by the CLI, used at once through every instance.
    for (const instance of instances) {
      const res = await call(instance.port, { path: '/v1/pets', key })
      assert.equal(res.status, 200, res.body)
      assert.equal(res.body, '[]')
    }

    // Creates from many clients through all three, with reads among them.
    const CLIENTS = 16
    const PER_CLIENT = 12
    const acknowledged = (
      await Promise.all(
        Array.from({ length: CLIENTS }, async (_, c) => {
          const mine: Pet[] = []
          for (let i = 0; i < PER_CLIENT; i++) {
            const instance = instances[(c + i) % 3]!
            const body = { name: `client-${c}-pet-${i}`, categoryId: c * 100 + i }
            const pet = created(await post(instance, key, body), body)
            mine.push(pet)
            const read = await call(instances[(c + i + 1) % 3]!.port, {
              path: `/v1/pets/${pet.id}`,
              key,
            })
            assert.equal(read.status, 200, read.body)
            assert.deepEqual(JSON.parse(read.body), pet)
          }
          return mine
        }),
      )
    )
      .flat()
      .sort((a, b) => a.id - b.id)
    assert.equal(new Set(acknowledged.map((p) => p.id)).size, CLIENTS * PER_CLIENT)
    for (const first of [0, 1, 2]) {
      const rotated = [...instances.slice(first), ...instances.slice(0, first)]
      assert.deepEqual(await listAllPets(rotated, key, { limit: 25 }), acknowledged)
    }

    // An Idempotency-Key claimed through one instance replays through the others.
    const order = { name: 'ordered', categoryId: 5, status: 'pending' }
    const first = created(
      await post(instances[0]!, key, order, { 'idempotency-key': 'o-1' }),
      order,
    )
    for (const instance of instances.slice(1)) {
      const replay = await post(instance, key, order, { 'idempotency-key': 'o-1' })
      assert.equal(replay.status, 201, replay.body)
      assert.equal(replay.headers['idempotent-replayed'], 'true')
      assert.deepEqual(JSON.parse(replay.body), first)
    }

    // No request of any instance was answered 500 (an error is logged for each).
    for (const instance of instances) {
      const errors = instance.logLines().filter((l) => l.level >= 50)
      assert.deepEqual(errors, [])
    }
  })

  test('behind PgBouncer, a create waiting for a lock is given up by the server within the timeout', async (t) => {
    const bouncer = await startPgBouncer(t, { server: POSTGRES_ADMIN_URL, defaultPoolSize: 2 })
    const db = await databaseThrough(t, bouncer)
    const [a, b] = await Promise.all([0, 1].map(() => startService(t, { env: settings(db.url) })))
    const key = await createKey(db.url, 'timeouts')
    const holder = await directClient(t, db.direct)

    // The insert lock held: the create (one statement) waits, and the server ends the wait.
    await holder.query('SELECT pg_advisory_lock($1)', [PET_INSERT_LOCK])
    const started = performance.now()
    assertUnavailable(await post(a!, key, { name: 'ghost', categoryId: 1 }), 'create')
    const took = performance.now() - started
    assert.ok(took >= TIMEOUT_MS * 0.9 && took < TIMEOUT_MS + 1500, `answered in ${took} ms`)
    await until(
      'no backend waits for the insert lock',
      async () => (await lockWaiters(db.name)) === 0,
      1000,
    )
    await holder.query('SELECT pg_advisory_unlock($1)', [PET_INSERT_LOCK])

    // A claimed Idempotency-Key's row locked: the claim's transaction waits, and its statement
    // timeout, set in that transaction, ends it.
    const order = { name: 'ordered', categoryId: 2 }
    const first = created(await post(a!, key, order, { 'idempotency-key': 'k-1' }), order)
    await holder.query('BEGIN')
    await holder.query("SELECT 1 FROM idempotency_keys WHERE idempotency_key = 'k-1' FOR UPDATE")
    const claimStarted = performance.now()
    assertUnavailable(await post(b!, key, order, { 'idempotency-key': 'k-1' }), 'claim')
    const claimTook = performance.now() - claimStarted
    assert.ok(claimTook < TIMEOUT_MS + 1500, `answered in ${claimTook} ms`)
    await until(
      'no backend waits for the row lock',
      async () => (await lockWaiters(db.name)) === 0,
      1000,
    )
    await holder.query('COMMIT')

    const replay = await post(b!, key, order, { 'idempotency-key': 'k-1' })
    assert.equal(replay.status, 201, replay.body)
    assert.equal(replay.headers['idempotent-replayed'], 'true')
    assert.deepEqual(JSON.parse(replay.body), first)
    // The create answered 503 was not made once the lock went.
    assert.deepEqual(await listAllPets([a!, b!], key), [first])
  })

  test('a start through PgBouncer on a database that does not exist fails, naming it', async (t) => {
    const bouncer = await startPgBouncer(t, { server: POSTGRES_ADMIN_URL })
    const url = new URL(bouncer.through(await freshPostgresDatabase(t).then((d) => d.url)))
    url.pathname = '/petstore_no_such_database'
    const proc = spawnService(t, { env: settings(url.toString()) })
    assert.deepEqual(await proc.exited, { code: 1, signal: null })
    assert.equal(proc.stdout(), '')
    assert.equal(
      proc.stderr(),
      `petstore: PostgreSQL at 127.0.0.1:${bouncer.port} has no database "petstore_no_such_database" (create it with createdb petstore_no_such_database, or fix PETSTORE_DATABASE_URL)\n`,
    )
  })
})
