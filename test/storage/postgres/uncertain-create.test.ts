// A create whose statement outlives its caller's deadline: locks held by other sessions (each wait
// shorter than the lock bound, their sum longer than the deadline) keep it waiting after the
// service answered 503. The retry with the same Idempotency-Key and body must never make a second
// pet: the first statement either never commits (its claim was released first, or its deadline
// passed), or it commits and the retry replays it.
import assert from 'node:assert/strict'
import { test } from 'node:test'
import { PET_INSERT_LOCK } from '../../../src/storage/postgres/migrations.js'
import { holding, serviceOnWatchedDatabase, storedPets } from '../../support/postgres.js'
import { forStore } from '../../support/stores.js'
import { until } from '../../support/wait.js'

const API_KEY = 'uncertain-create-key-0123456789'
const TIMEOUT_MS = 1000

forStore('postgres', () => {
  test('postgres: a create that outlives its deadline behind other sessions’ locks is never stored twice', async (t) => {
    const { url, sessions, service } = await serviceOnWatchedDatabase(t, TIMEOUT_MS, {
      PETSTORE_API_KEYS: API_KEY,
    })

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
      const waited = await sessions.lockWait('%insert_pets%')
      return waited !== null && waited * 1000 >= TIMEOUT_MS / 2
    })
    await insertLock.release()
    const answer = await first
    assert.equal(answer.status, 503)
    assert.equal(answer.headers.get('retry-after'), '1')
    // The statement may still be waiting: let it go on, and see what it does.
    await tableLock.release()
    await until('the first create statement has ended', async () => {
      return !(await sessions.running('%insert_pets%'))
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
    const names = (await storedPets(url)).map((p) => p.name)
    assert.deepEqual(names, ['Once'])
  })
})
