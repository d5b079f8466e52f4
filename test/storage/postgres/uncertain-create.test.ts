// A create whose statement outlives its caller's deadline: locks held by other sessions (each wait
// shorter than the lock bound, their sum longer than the deadline) keep it waiting after the
// service answered 503. The retry with the same Idempotency-Key and body must never make a second
// pet: the first statement either never commits (its claim was released first, or its deadline
// passed), or it commits and the retry replays it.
import assert from 'node:assert/strict'
import { randomBytes } from 'node:crypto'
import { test } from 'node:test'
import pg from 'pg'
import { PET_INSERT_LOCK } from '../../../src/storage/postgres/migrations.js'
import { freshPostgresUrl, storedPets } from '../../support/postgres.js'
import { startService } from '../../support/process.js'
import { forStore } from '../../support/stores.js'
import { until } from '../../support/wait.js'

const API_KEY = 'uncertain-create-key-0123456789'
const TIMEOUT_MS = 1000

/** A session of its own holding a lock until told to let go. */
async function holding(url: string, lock: string): Promise<{ release: () => Promise<void> }> {
  const client = new pg.Client({ connectionString: url })
  await client.connect()
  await client.query('BEGIN')
  await client.query(lock)
  return {
    release: async () => {
      await client.query('COMMIT')
      await client.end()
    },
  }
}

/** Seconds insert_pets from the service (tagged by application_name) has waited for a lock. */
async function insertWaiting(admin: pg.Client, app: string): Promise<number | null> {
  const { rows } = await admin.query<{ waited: number }>(
    `SELECT extract(epoch FROM clock_timestamp() - query_start)::float8 AS waited
     FROM pg_stat_activity
     WHERE application_name = $1 AND query LIKE '%insert_pets%' AND wait_event_type = 'Lock'`,
    [app],
  )
  return rows[0]?.waited ?? null
}

forStore('postgres', () => {
  test('postgres: a create that outlives its deadline behind other sessions’ locks is never stored twice', async (t) => {
    const url = await freshPostgresUrl(t)
    const app = `petstore-uncertain-${randomBytes(4).toString('hex')}`
    const serviceUrl = new URL(url)
    serviceUrl.searchParams.set('application_name', app)
    const service = await startService(t, {
      env: {
        PETSTORE_DATABASE_URL: serviceUrl.toString(),
        PETSTORE_DATABASE_TIMEOUT: `${TIMEOUT_MS}ms`,
        PETSTORE_API_KEYS: API_KEY,
        PETSTORE_LOG_LEVEL: 'warn',
      },
    })
    const admin = new pg.Client({ connectionString: url })
    await admin.connect()
    t.after(() => admin.end())

    const create = () =>
      fetch(`${service.origin}/v1/pets`, {
        method: 'POST',
        headers: {
          authorization: `Bearer ${API_KEY}`,
          'content-type': 'application/json',
          'idempotency-key': 'once',
        },
        body: '{"name":"Once","categoryId":1}',
      })

    // Another create holds the insert lock, an index build the table: two waits in a row.
    const insertLock = await holding(url, `SELECT pg_advisory_xact_lock(${PET_INSERT_LOCK})`)
    const tableLock = await holding(url, 'LOCK TABLE pets IN SHARE MODE')
    const first = create()
    // Half the deadline spent on the first wait, the rest on the second, which outlasts it.
    await until('the create waits for the insert lock for half its deadline', async () => {
      const waited = await insertWaiting(admin, app)
      return waited !== null && waited * 1000 >= TIMEOUT_MS / 2
    })
    await insertLock.release()
    const answer = await first
    assert.equal(answer.status, 503)
    assert.equal(answer.headers.get('retry-after'), '1')
    // The statement may still be waiting: let it go on, and see what it does.
    await tableLock.release()
    await until('the first create statement has ended', async () => {
      const { rows } = await admin.query(
        `SELECT 1 FROM pg_stat_activity WHERE application_name = $1 AND query LIKE '%insert_pets%' AND state = 'active'`,
        [app],
      )
      return rows.length === 0
    })

    // The retry: 201 with a new pet, 200-style replay of the first, or 409 while its fate is
    // unknown; never a second pet.
    let retry: Response
    do retry = await create()
    while (retry.status === 409)
    assert.equal(retry.status, 201)
    const pet = await retry.json()
    const again = await create()
    assert.equal(again.status, 201)
    assert.equal(again.headers.get('idempotent-replayed'), 'true')
    assert.deepEqual(await again.json(), pet)
    assert.deepEqual(
      (await storedPets(url)).map((p) => p.name),
      ['Once'],
    )
  })
})
