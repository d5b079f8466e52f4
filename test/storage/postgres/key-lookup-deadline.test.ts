// A stored API key not yet remembered is looked up in the database within what is left of the
// request's deadline, not within a timeout of its own: locks held by other sessions make the data
// version read wait first, then the key lookup. Each wait alone is shorter than
// PETSTORE_DATABASE_TIMEOUT; the answer still comes within it (and a 20% margin).
import assert from 'node:assert/strict'
import { test } from 'node:test'
import { createApiKey } from '../../../src/auth/api-keys.js'
import { systemClock } from '../../../src/clock.js'
import { openPostgresStore } from '../../../src/storage/postgres/postgres-store.js'
import { holding, serviceOnWatchedDatabase } from '../../support/postgres.js'
import { forStore } from '../../support/stores.js'
import { until } from '../../support/wait.js'

const TIMEOUT_MS = 1000

forStore('postgres', () => {
  test('postgres: a key looked up after a slow data version read shares its deadline', async (t) => {
    const { url, sessions, service } = await serviceOnWatchedDatabase(t, TIMEOUT_MS)
    const store = await openPostgresStore({ url, poolSize: 1, timeoutMs: 5000 })
    const { key } = await createApiKey(store, systemClock, 'never-seen')
    await store.close()
    // A request left waiting (a lookup with no bound of its own) fails the test instead of hanging.
    const list = () =>
      fetch(`${service.origin}/v1/pets`, {
        headers: { authorization: `Bearer ${key}` },
        signal: AbortSignal.timeout(TIMEOUT_MS * 5),
      })

    const versionLock = await holding(url, 'LOCK TABLE data_version IN ACCESS EXCLUSIVE MODE')
    const keysLock = await holding(url, 'LOCK TABLE api_keys IN ACCESS EXCLUSIVE MODE')
    try {
      const started = performance.now()
      const answer = list()
      // Half the deadline spent on the version read; then the lookup meets the second lock.
      await until('the version read waits for half the deadline', async () => {
        const waited = await sessions.lockWait('%FROM data_version%')
        return waited !== null && waited * 1000 >= TIMEOUT_MS / 2
      })
      await versionLock.release()
      await until('the key lookup waits', async () => {
        return (await sessions.lockWait('%JOIN api_keys%')) !== null
      })
      const response = await answer
      const ms = performance.now() - started
      assert.equal(response.status, 503)
      assert.equal(((await response.json()) as { code: string }).code, 'service_unavailable')
      assert.ok(ms <= TIMEOUT_MS * 1.2, `answered in ${Math.round(ms)} ms`)
    } finally {
      // Released whatever happened: the service's shutdown and the database's drop wait for them.
      await versionLock.release()
      await keysLock.release()
    }
    await until('the key is accepted once nothing holds the table', async () => {
      return (await list()).status === 200
    })
  })
})
