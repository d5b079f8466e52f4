// PostgreSQL refusing writes, as a demoted primary or a hot standby does after a failover (SQLSTATE
// 25006), made on the real server with `ALTER DATABASE … SET default_transaction_read_only`: it
// applies to sessions that start afterwards, so ending the open ones makes every connection
// read-only, and leaving them keeps some writable. Writes answer 503 with Retry-After, never 500;
// reads go on; once the database takes writes again the service does too, without a restart,
// because a connection that refused a write is not put back in the pool.
import assert from 'node:assert/strict'
import { describe, type TestContext, test } from 'node:test'
import type pg from 'pg'
import { generateApiKey } from '../../../src/auth/api-keys.js'
import { StorageUnavailableError } from '../../../src/storage/errors.js'
import { preparePostgres } from '../../../src/storage/postgres/migrate.js'
import {
  openPostgresStore,
  type PostgresStore,
} from '../../../src/storage/postgres/postgres-store.js'
import { call, createdPets, type Reply, startCreateLoad } from '../../support/api.js'
import { DB_UNREACHABLE, DB_READ_ONLY as READ_ONLY } from '../../support/errors.js'
import {
  adminQuery,
  assertAcknowledgedStored,
  endConnections,
  freshPostgresDatabase,
} from '../../support/postgres.js'
import { forStore } from '../../support/stores.js'
import { until } from '../../support/wait.js'
import { JSON_LOGS_NO_LIMIT, workspace } from '../../support/workspace.js'
import { assertUnavailableReply } from './expected.js'

const KEY = 'read-only-test-key-0123456789'
const FIRST_PAGE = { afterId: null, status: null, limit: 10 }

/** New sessions of `database` are read-only (on) or not; open sessions keep what they had. */
async function setReadOnly(database: string, on: boolean): Promise<void> {
  await adminQuery(
    on
      ? `ALTER DATABASE ${database} SET default_transaction_read_only = on`
      : `ALTER DATABASE ${database} RESET default_transaction_read_only`,
  )
}

// ---------------------------------------------------------------- the store

function isReadOnly(err: unknown): boolean {
  assert.ok(err instanceof StorageUnavailableError, String(err))
  assert.equal(err.message, READ_ONLY.message)
  assert.equal(err.retryAfterSeconds, 1)
  assert.equal((err.cause as pg.DatabaseError).code, '25006')
  return true
}

/** How a write ended: written, or refused as read-only (anything else fails the test). */
const outcome = (write: Promise<unknown>): Promise<string> =>
  write.then(
    () => 'written',
    (err: unknown) => (isReadOnly(err) ? 'read-only' : 'never'),
  )

/** The `n`th claim of an Idempotency-Key under `apiKeyId`. */
const claimRequest = (n: number, apiKeyId = 'key-id') => ({
  apiKeyId,
  key: `claim-${n}`,
  requestHash: 'hash',
  now: new Date(),
  retentionMs: 60_000,
  leaseMs: 10_000,
  token: `token-${n}`,
})

/** Writes of each kind of path to the database: a statement alone, a transaction, group commit. */
const WRITES: { what: string; write: (store: PostgresStore, n: number) => Promise<unknown> }[] = [
  {
    what: 'a create (group commit, insert_pets)',
    write: (store, n) => store.createPet({ name: `pet-${n}`, categoryId: 1n }),
  },
  {
    what: 'an idempotency claim (a transaction)',
    write: (store, n) => store.claimIdempotencyKey(claimRequest(n)),
  },
  {
    what: 'an API key (one statement)',
    write: (store, n) => store.insertApiKey(generateApiKey(`key-${n}`, new Date(), null).record),
  },
]

forStore('postgres', () => {
  describe('postgres read-only: the store', () => {
    async function openStore(t: TestContext, poolSize: number) {
      const db = await freshPostgresDatabase(t)
      const store = await openPostgresStore({ url: db.url, poolSize, timeoutMs: 2000 })
      t.after(() => store.close())
      return { db, store }
    }

    const connections = (store: PostgresStore) => {
      const { inUse, idle } = store.stats().connections
      return inUse + idle
    }

    /** Ends the store's sessions, and waits until its pool has let go of every one. */
    async function endStoreSessions(database: string, store: PostgresStore): Promise<void> {
      await endConnections(database)
      await until('the pool drops its ended connections', () => connections(store) === 0)
    }

    test('every write is refused as read-only, every read goes on, and writes come back', async (t) => {
      const { db, store } = await openStore(t, 2)
      const before = await store.createPet({ name: 'before', categoryId: 1n, status: 'sold' })
      const { record } = generateApiKey('existing', new Date(), null)
      await store.insertApiKey(record)
      const claim = claimRequest(1, record.id)
      const version = await store.dataVersion()

      await setReadOnly(db.name, true)
      await endStoreSessions(db.name, store)

      const refused = { name: 'refused', categoryId: 1n }
      await assert.rejects(store.createPet(refused), isReadOnly)
      const completing = { apiKeyId: record.id, key: 'k', token: 't' }
      await assert.rejects(store.createPet(refused, completing), isReadOnly)
      await assert.rejects(store.insertPets([{ name: 'seeded', categoryId: 2n }]), isReadOnly)
      await assert.rejects(store.claimIdempotencyKey(claim), isReadOnly)
      await assert.rejects(store.releaseIdempotencyKey(claim), isReadOnly)
      await assert.rejects(store.deleteIdempotencyKeysBefore(new Date()), isReadOnly)
      const newKey = generateApiKey('new', new Date(), null).record
      await assert.rejects(store.insertApiKey(newKey), isReadOnly)
      await assert.rejects(store.revokeApiKey(record.id, new Date()), isReadOnly)

      assert.deepEqual(await store.listPets(FIRST_PAGE), [before])
      assert.deepEqual(await store.getPet(before.id), before)
      assert.deepEqual(await store.findApiKey(record.id), record)
      assert.deepEqual(await store.listApiKeys(), [record])
      assert.equal(await store.countApiKeys(), 1)
      assert.deepEqual(await store.dataVersion(), version)
      await store.ping()

      await setReadOnly(db.name, false)
      await endStoreSessions(db.name, store)
      assert.deepEqual(await store.claimIdempotencyKey(claim), { outcome: 'claimed' })
      const after = await store.createPet({ name: 'after', categoryId: 1n }, claim)
      assert.equal(await store.revokeApiKey(record.id, new Date()), true)
      const names = (await store.listPets(FIRST_PAGE)).map((p) => p.name)
      assert.deepEqual(names, ['before', 'after'])
      assert.deepEqual(await store.claimIdempotencyKey(claim), {
        outcome: 'completed',
        petId: after.id,
      })
    })

    for (const { what, write } of WRITES) {
      test(`set while sessions live: they go on writing, new ones refuse, and each refusing connection is dropped after one refusal: ${what}`, async (t) => {
        const { db, store } = await openStore(t, 3)
        assert.equal(await outcome(write(store, 1)), 'written')
        assert.equal(connections(store), 1)

        await setReadOnly(db.name, true)
        // The open session keeps the default it started with.
        assert.equal(await outcome(write(store, 2)), 'written')

        // Three connections, all of them opened read-only, idle in the pool.
        await endStoreSessions(db.name, store)
        await Promise.all([1, 2, 3].map(() => store.ping()))
        assert.equal(connections(store), 3)
        await assert.rejects(write(store, 3), isReadOnly)
        assert.equal(connections(store), 2)
        await Promise.all([1, 2, 3].map(() => store.ping()))
        assert.equal(connections(store), 3)

        // Writable again for new sessions only, as after a failover behind a proxy: each kept
        // connection refuses its first write and is dropped; the next is opened anew and writes.
        await setReadOnly(db.name, false)
        const outcomes: string[] = []
        for (let n = 10; n < 18; n++) outcomes.push(await outcome(write(store, n)))
        assert.deepEqual(outcomes, [...Array(3).fill('read-only'), ...Array(5).fill('written')])
        assert.equal(connections(store), 1)
      })
    }
  })

  // ---------------------------------------------------------------- the real service

  function settings(databaseUrl: string): Record<string, string> {
    return {
      PETSTORE_DATABASE_URL: databaseUrl,
      PETSTORE_API_KEYS: KEY,
      PETSTORE_DATABASE_TIMEOUT: '2s',
      PETSTORE_DATABASE_POOL_SIZE: '2',
      PETSTORE_LOG_LEVEL: 'warn',
    }
  }

  const assertRefused = (reply: Reply, what: string) =>
    assertUnavailableReply(reply, what, READ_ONLY)

  const create = (port: number, name: string, headers: Record<string, string> = {}) =>
    call(port, {
      method: 'POST',
      path: '/v1/pets',
      key: KEY,
      body: JSON.stringify({ name, categoryId: 7, status: 'available' }),
      headers,
    })

  /** How the creates were answered, for the test's output. */
  const tally = (load: ReturnType<typeof startCreateLoad>) =>
    `creates: ${load.count(201)} × 201, ${load.count(503, READ_ONLY)} × 503 read-only, ${load.count(503, DB_UNREACHABLE)} × 503 not reachable, ${load.outcomes.length} in all`

  describe('postgres read-only: the service', () => {
    test('turned read-only under load: creates 201 or 503 (never 500), reads 200, writes again once writable', async (t) => {
      const db = await freshPostgresDatabase(t)
      const service = await workspace(t, JSON_LOGS_NO_LIMIT).start([], settings(db.url))
      const port = service.port
      const get = (path: string) => call(port, { path, key: KEY })
      const keyedHeaders = { 'idempotency-key': 'read-only-1' }

      const first = await create(port, 'first')
      assert.equal(first.status, 201, first.body)
      const firstPet = JSON.parse(first.body) as { id: number }
      const load = startCreateLoad(port, KEY, 4)
      t.after(() => load.stop())
      await until('creates succeed under load', () => load.count(201) >= 20)

      await setReadOnly(db.name, true)
      await endConnections(db.name)
      await until('creates are refused as read-only', () => load.count(503, READ_ONLY) >= 10)

      // Reads are answered by the database meanwhile: a pet and a page never asked for before.
      const got = await get(`/v1/pets/${firstPet.id}`)
      assert.equal(got.status, 200, got.body)
      assert.deepEqual(JSON.parse(got.body), firstPet)
      const page = await get('/v1/pets?status=available&limit=1')
      assert.equal(page.status, 200, page.body)
      assert.deepEqual(JSON.parse(page.body), [firstPet])
      assert.equal((await get('/v1/pets')).status, 200)
      // Still ready: it serves reads, and every instance shares the one database.
      assert.equal((await get('/readyz')).status, 200)
      assertRefused(await create(port, 'keyed', keyedHeaders), 'a create with an Idempotency-Key')

      const createdBefore = load.count(201)
      await setReadOnly(db.name, false)
      await endConnections(db.name)
      await until('creates succeed again', () => load.count(201) >= createdBefore + 20)
      await load.stop()
      t.diagnostic(tally(load))
      assert.equal(service.child.exitCode, null, 'the service is still the one started')

      const acknowledged = [firstPet, ...createdPets(load.outcomes)]
      // The create refused with 503, retried with the same key: made now, then replayed.
      const retried = await create(port, 'keyed', keyedHeaders)
      assert.equal(retried.status, 201, retried.body)
      assert.equal(retried.headers['idempotent-replayed'], undefined)
      const replayed = await create(port, 'keyed', keyedHeaders)
      assert.equal(replayed.headers['idempotent-replayed'], 'true')
      assert.equal(replayed.body, retried.body)
      acknowledged.push(JSON.parse(retried.body) as { id: number })
      await assertAcknowledgedStored(service, KEY, db.url, acknowledged)

      // Each refusal logged as a warning; nothing as an error.
      const lines = service.logLines()
      assert.ok(lines.some((l) => l.level === 40 && l.msg === 'storage unavailable'))
      const errors = lines.filter((l) => l.level >= 50)
      assert.deepEqual(errors, [])
    })

    test('turned read-only with its sessions left open: they go on writing; once ended, creates are refused; after a reset the kept read-only ones are replaced', async (t) => {
      const db = await freshPostgresDatabase(t)
      const service = await workspace(t, JSON_LOGS_NO_LIMIT).start([], settings(db.url))
      const port = service.port
      const load = startCreateLoad(port, KEY, 4)
      t.after(() => load.stop())
      await until('creates succeed under load', () => load.count(201) >= 20)

      await setReadOnly(db.name, true)
      const createdBefore = load.count(201)
      await until('the open sessions go on writing', () => load.count(201) >= createdBefore + 30)

      await endConnections(db.name)
      await until('creates are refused as read-only', () => load.count(503, READ_ONLY) >= 10)

      // Writable for new sessions only: the pooled connections, opened read-only, stay so. Each is
      // dropped at its first refusal, and the one opened in its place writes.
      await setReadOnly(db.name, false)
      const createdWhileRefused = load.count(201)
      await until('creates succeed again', () => load.count(201) >= createdWhileRefused + 20)
      await load.stop()
      t.diagnostic(tally(load))
      assert.equal(service.child.exitCode, null, 'the service is still the one started')

      await assertAcknowledgedStored(service, KEY, db.url, createdPets(load.outcomes))
      const errors = service.logLines().filter((l) => l.level >= 50)
      assert.deepEqual(errors, [])
    })

    test('started on a read-only database: reads answer, creates are refused, API keys cannot be made', async (t) => {
      const db = await freshPostgresDatabase(t)
      await preparePostgres({ url: db.url, poolSize: 1, timeoutMs: 2000 })
      await setReadOnly(db.name, true)
      const harness = workspace(t, JSON_LOGS_NO_LIMIT)

      const service = await harness.start([], settings(db.url))
      const port = service.port
      const list = await call(port, { path: '/v1/pets', key: KEY })
      assert.equal(list.status, 200, list.body)
      assert.deepEqual(JSON.parse(list.body), [])
      assertRefused(await create(port, 'refused'), 'createPet')
      assertRefused(
        await create(port, 'refused', { 'idempotency-key': 'k-1' }),
        'createPet with an Idempotency-Key',
      )

      const keys = await harness.run(['keys', 'create', '--name', 'ops'], settings(db.url))
      assert.deepEqual(
        { code: keys.code, stdout: keys.stdout, stderr: keys.stderr },
        { code: 1, stdout: '', stderr: 'petstore: the database is read-only; retry later\n' },
      )
    })

    test('a start on a read-only database whose schema is not migrated yet fails, saying so', async (t) => {
      const db = await freshPostgresDatabase(t)
      await setReadOnly(db.name, true)
      const run = await workspace(t, JSON_LOGS_NO_LIMIT).run(['serve'], settings(db.url))
      assert.deepEqual(
        { code: run.code, stdout: run.stdout, stderr: run.stderr },
        {
          code: 1,
          stdout: '',
          stderr: `petstore: PostgreSQL at 127.0.0.1:5432 is read-only: its schema cannot be migrated (cannot execute CREATE TABLE in a read-only transaction)\n`,
        },
      )
    })
  })
})
