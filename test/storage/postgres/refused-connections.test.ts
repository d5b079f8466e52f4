// PostgreSQL refusing the service's connections, on the real server: a database that stops
// accepting connections and ends the open ones, a role that may no longer log in or has no
// connection left, a database renamed away. Each is 503 with Retry-After for the caller (the
// database cannot serve now), never 500, and the service recovers by itself once it is undone.
import assert from 'node:assert/strict'
import { randomBytes } from 'node:crypto'
import { describe, type TestContext, test } from 'node:test'
import pg from 'pg'
import { StorageUnavailableError } from '../../../src/storage/errors.js'
import {
  openPostgresStore,
  type PostgresStore,
} from '../../../src/storage/postgres/postgres-store.js'
import { call, startCreateLoad } from '../../support/api.js'
import { DB_UNREACHABLE, NOT_READY } from '../../support/errors.js'
import {
  adminQuery,
  assertAcknowledgedStored,
  endConnections,
  freshPostgresDatabase,
} from '../../support/postgres.js'
import { spawnService } from '../../support/process.js'
import { forStore } from '../../support/stores.js'
import { until } from '../../support/wait.js'
import { JSON_LOGS_NO_LIMIT, workspace } from '../../support/workspace.js'
import { assertUnavailableReply } from './expected.js'

const KEY = 'refused-connections-key-0123456789'
const FIRST_PAGE = { afterId: null, status: null, limit: 5 }

function isUnavailable(err: unknown): boolean {
  assert.ok(err instanceof StorageUnavailableError, String(err))
  assert.equal(err.message, DB_UNREACHABLE.message)
  assert.equal(err.retryAfterSeconds, 1)
  return true
}

/** The store's operations that take a connection: a query, a transaction, readiness. */
async function assertStoreUnavailable(store: PostgresStore): Promise<void> {
  await assert.rejects(store.listPets(FIRST_PAGE), isUnavailable)
  await assert.rejects(store.createPet({ name: 'refused', categoryId: 1n }), isUnavailable)
  await assert.rejects(store.ping(), isUnavailable)
}

forStore('postgres', () => {
  describe('postgres refusing connections: the store reports it as unavailable', () => {
    /** A database owned by a role of its own (so that the role can be refused), and a store on it. */
    async function storeOfOwnRole(t: TestContext) {
      const db = await freshPostgresDatabase(t)
      const role = `petstore_test_role_${process.pid}_${randomBytes(4).toString('hex')}`
      await adminQuery(`CREATE ROLE ${role} LOGIN`)
      // After the database's own drop, registered before: a role owning a database cannot go.
      t.after(() => adminQuery(`DROP ROLE IF EXISTS ${role}`))
      await adminQuery(`ALTER DATABASE ${db.name} OWNER TO ${role}`)
      const url = new URL(db.url)
      url.username = role
      const store = await openPostgresStore({ url: url.toString(), poolSize: 2, timeoutMs: 2000 })
      t.after(() => store.close())
      await store.createPet({ name: 'before', categoryId: 1n })
      return { db, role, store }
    }

    const faults: {
      sqlState: string
      refuse: (db: string, role: string) => Promise<unknown>
      undo: (db: string, role: string) => Promise<unknown>
    }[] = [
      {
        sqlState: '55000 (the database does not accept connections)',
        refuse: (db) => adminQuery(`ALTER DATABASE ${db} ALLOW_CONNECTIONS false`),
        undo: (db) => adminQuery(`ALTER DATABASE ${db} ALLOW_CONNECTIONS true`),
      },
      {
        sqlState: '28000 (the role may not log in)',
        refuse: (_, role) => adminQuery(`ALTER ROLE ${role} NOLOGIN`),
        undo: (_, role) => adminQuery(`ALTER ROLE ${role} LOGIN`),
      },
      {
        sqlState: '53300 (no connection left for the role)',
        refuse: (_, role) => adminQuery(`ALTER ROLE ${role} CONNECTION LIMIT 0`),
        undo: (_, role) => adminQuery(`ALTER ROLE ${role} CONNECTION LIMIT -1`),
      },
    ]
    for (const fault of faults) {
      test(`SQLSTATE ${fault.sqlState} at connect: unavailable, then recovered`, async (t) => {
        const { db, role, store } = await storeOfOwnRole(t)
        await fault.refuse(db.name, role)
        try {
          await endConnections(db.name)
          await assertStoreUnavailable(store)
        } finally {
          await fault.undo(db.name, role)
        }
        await store.ping()
        const names = (await store.listPets(FIRST_PAGE)).map((p) => p.name)
        assert.deepEqual(names, ['before'])
      })
    }

    test('SQLSTATE 3D000 at connect (the database renamed away): unavailable, then recovered', async (t) => {
      const { db, store } = await storeOfOwnRole(t)
      const away = `${db.name}_away`
      t.after(() => adminQuery(`DROP DATABASE IF EXISTS ${away} WITH (FORCE)`))
      await endConnections(db.name)
      await adminQuery(`ALTER DATABASE ${db.name} RENAME TO ${away}`)
      await assertStoreUnavailable(store)
      await adminQuery(`ALTER DATABASE ${away} RENAME TO ${db.name}`)
      await store.ping()
      assert.equal((await store.listPets(FIRST_PAGE)).length, 1)
    })

    test('SQLSTATE 57P01 on an open connection (ended mid-transaction): unavailable', async (t) => {
      const { db, store } = await storeOfOwnRole(t)
      // The create waits for the insert lock, held here, so that its connection is ended mid-way.
      const holder = new pg.Client({ connectionString: db.url })
      // Ended by the database's drop at the test's end, should the test fail before it ends itself.
      holder.on('error', () => undefined)
      await holder.connect()
      await holder.query('BEGIN')
      await holder.query('SELECT pg_advisory_xact_lock($1)', [0x70657473])
      // Settled into a value at once: the rejection comes while the test is still waiting.
      const failure = store.createPet({ name: 'ended', categoryId: 1n }).then(
        () => null,
        (err: unknown) => err,
      )
      const holderPid = (holder as unknown as { processID: number }).processID
      const waitingSql = `SELECT 1 FROM pg_stat_activity
        WHERE datname = $1 AND wait_event_type = 'Lock' AND pid <> $2`
      const waiting = async () =>
        (await adminQuery(waitingSql, [db.name, holderPid])).rowCount === 1
      await until('the create waits for the insert lock', waiting)
      await adminQuery(
        `SELECT pg_terminate_backend(pid) FROM pg_stat_activity
       WHERE datname = $1 AND wait_event_type = 'Lock'`,
        [db.name],
      )
      assert.ok(isUnavailable(await failure))
      await holder.end()
      assert.equal((await store.createPet({ name: 'after', categoryId: 1n })).name, 'after')
    })
  })

  // ---------------------------------------------------------------- the real service

  describe('a start the server refuses fails, saying why', () => {
    /** What `petstore serve` said on stderr, having exited 1 without serving. */
    async function startFailure(t: TestContext, url: string): Promise<string> {
      const proc = spawnService(t, {
        env: {
          PETSTORE_DATABASE_URL: url,
          PETSTORE_API_KEYS: KEY,
          PETSTORE_DATABASE_TIMEOUT: '2s',
        },
      })
      assert.deepEqual(await proc.exited, { code: 1, signal: null })
      assert.equal(proc.stdout(), '')
      return proc.stderr()
    }
    const server = (url: string) => `PostgreSQL at ${new URL(url).hostname}:${new URL(url).port}`

    test('a database that does not exist (3D000): named, with how to make it', async (t) => {
      const url = new URL((await freshPostgresDatabase(t)).url)
      url.pathname = '/petstore_no_such_database'
      assert.equal(
        await startFailure(t, url.toString()),
        `petstore: ${server(url.toString())} has no database "petstore_no_such_database" (create it with createdb petstore_no_such_database, or fix PETSTORE_DATABASE_URL)\n`,
      )
    })

    test("a database that accepts no connections (55000): refused, in the server's words", async (t) => {
      const db = await freshPostgresDatabase(t)
      await adminQuery(`ALTER DATABASE ${db.name} ALLOW_CONNECTIONS false`)
      assert.equal(
        await startFailure(t, db.url),
        `petstore: ${server(db.url)} refused the connection: database "${db.name}" is not currently accepting connections\n`,
      )
    })

    test("a role that does not exist (28000): refused, in the server's words", async (t) => {
      const url = new URL((await freshPostgresDatabase(t)).url)
      url.username = 'petstore_no_such_role'
      assert.equal(
        await startFailure(t, url.toString()),
        `petstore: ${server(url.toString())} refused the connection: role "petstore_no_such_role" does not exist\n`,
      )
    })
  })

  test('service: a database that stops accepting connections and ends them answers 503 until allowed again, losing no acknowledged pet', async (t) => {
    const db = await freshPostgresDatabase(t)
    const harness = workspace(t, JSON_LOGS_NO_LIMIT)
    const service = await harness.start([], {
      PETSTORE_DATABASE_URL: db.url,
      PETSTORE_API_KEYS: KEY,
      PETSTORE_DATABASE_TIMEOUT: '1s',
      PETSTORE_DATABASE_POOL_SIZE: '2',
      PETSTORE_LOG_LEVEL: 'warn',
    })
    const port = service.port
    const get = (path: string) => call(port, { path, key: KEY })
    const create = (pet: object, headers = {}) =>
      call(port, { method: 'POST', path: '/v1/pets', key: KEY, body: JSON.stringify(pet), headers })
    const keyed = () =>
      create(
        { name: 'keyed', categoryId: 9, status: 'pending' },
        { 'idempotency-key': 'refused-1' },
      )

    const first = await create({ name: 'first', categoryId: 1 })
    assert.equal(first.status, 201, first.body)
    const load = startCreateLoad(port, KEY, 3)
    t.after(() => load.stop())
    await until('creates succeed under load', () => load.count(201) >= 20)

    await adminQuery(`ALTER DATABASE ${db.name} ALLOW_CONNECTIONS false`)
    await endConnections(db.name)
    await until('creates fail while refused', () => load.count(503) >= 6)

    const ready = await get('/readyz')
    assert.equal(ready.status, 503)
    assert.deepEqual(JSON.parse(ready.body), NOT_READY)
    assert.equal((await get('/healthz')).status, 200)
    assertUnavailableReply(await get('/v1/pets'), 'listPets')
    assertUnavailableReply(await get('/v1/pets/1'), 'getPet')
    assertUnavailableReply(await keyed(), 'createPet with an Idempotency-Key')

    const createdBefore = load.count(201)
    await adminQuery(`ALTER DATABASE ${db.name} ALLOW_CONNECTIONS true`)
    await until('readiness is back', async () => (await get('/readyz')).status === 200)
    await until('creates succeed again', () => load.count(201) >= createdBefore + 10)
    await load.stop()

    // Every create was answered 201 or 503, each with its whole body.
    for (const { name, reply } of load.outcomes) {
      if (reply.status === 503) {
        assertUnavailableReply(reply, name)
        continue
      }
      assert.equal(reply.status, 201, `${name}: ${reply.body}`)
      const { id } = JSON.parse(reply.body) as { id: number }
      assert.deepEqual(JSON.parse(reply.body), { id, name, categoryId: 7, status: 'available' })
    }

    // The create refused with 503, retried with the same key: made now, not 409.
    const retried = await keyed()
    assert.equal(retried.status, 201, retried.body)
    assert.equal(retried.headers['idempotent-replayed'], undefined)
    const replayed = await keyed()
    assert.equal(replayed.headers['idempotent-replayed'], 'true')
    assert.equal(replayed.body, retried.body)

    const acknowledged = [first, ...load.outcomes.map((o) => o.reply), retried]
      .filter((r) => r.status === 201)
      .map((r) => JSON.parse(r.body) as { id: number })
    await assertAcknowledgedStored(service, KEY, db.url, acknowledged)
  })
})
