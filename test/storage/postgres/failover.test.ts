// A failover as the runbook in docs/operations.md walks it, on real servers: a primary with a
// synchronous streaming standby, the service behind PgBouncer, creates running; the primary
// stopped in immediate mode (no checkpoint, as a crash), the standby promoted, PgBouncer repointed
// and reloaded. Every create answered 201 is on the promoted standby, none is stored twice, and
// creates succeed again without restarting the service. Then the old primary comes back through
// pg_rewind as the new primary's synchronous standby.
import assert from 'node:assert/strict'
import { test } from 'node:test'
import { call, createdPets, startCreateLoad } from '../../support/api.js'
import { startPgBouncer } from '../../support/pgbouncer.js'
import { assertAcknowledgedStored, storedPets } from '../../support/postgres.js'
import { startService } from '../../support/process.js'
import { queryOne, startReplicatedPostgres } from '../../support/replicated-postgres.js'
import { forStore } from '../../support/stores.js'
import { until } from '../../support/wait.js'

const KEY = 'failover-test-key-0123456789'
const CLIENTS = 4
/** Creates answered 201 before the primary is stopped, and again after PgBouncer is repointed. */
const CREATES_EACH_SIDE = 50

forStore('postgres', () => {
  test('a synchronous standby promoted under creates, behind PgBouncer: no create answered 201 is lost; the old primary rejoins by pg_rewind', {
    timeout: 180_000,
  }, async (t) => {
    const servers = await startReplicatedPostgres(t)
    // server_login_retry as the runbook sets it: a new server is tried a second after a failure.
    const bouncer = await startPgBouncer(t, { server: servers.primary.url, serverLoginRetry: 1 })
    const service = await startService(t, {
      env: {
        PETSTORE_DATABASE_URL: bouncer.through(servers.primary.url),
        PETSTORE_DATABASE_TIMEOUT: '2s',
        PETSTORE_API_KEYS: KEY,
        PETSTORE_RATE_LIMIT_MAX: '100000000',
        PETSTORE_LOG_LEVEL: 'error',
      },
    })
    const load = startCreateLoad(service.port, KEY, CLIENTS)
    t.after(() => load.stop())
    await until('creates succeed on the primary', () => load.count(201) >= CREATES_EACH_SIDE)

    const replication = await queryOne<{ state: string; sync_state: string }>(
      servers.primary.url,
      'SELECT state, sync_state FROM pg_stat_replication',
    )
    assert.deepEqual(replication, { state: 'streaming', sync_state: 'sync' })
    await servers.stopPrimary()
    const onPrimary = load.count(201)
    await servers.promoteStandby()
    await bouncer.repoint(servers.standby.url)
    const repointed = performance.now()
    const atRepoint = load.count(201)
    await until(
      'creates succeed on the promoted standby',
      () => load.count(201) > atRepoint,
      60_000,
    )
    const firstAfter = performance.now() - repointed
    await until(
      'creates go on on the promoted standby',
      () => load.count(201) >= atRepoint + CREATES_EACH_SIDE,
      60_000,
    )
    await load.stop()

    const created = createdPets(load.outcomes)
    assert.equal(created.length, load.count(201))
    await assertAcknowledgedStored(service, KEY, servers.standby.url, created)
    // The pets are on the new timeline's server, which takes writes.
    const row = await queryOne<{ r: boolean }>(
      servers.standby.url,
      'SELECT pg_is_in_recovery() AS r',
    )
    assert.equal(row?.r, false)

    // The old primary back, as the runbook does it: rewound from the new one, its synchronous
    // standby; a create then waits for it, and it holds every pet the new primary does.
    await servers.rejoinOldPrimary('standby2')
    const body = JSON.stringify({ name: 'after-rejoin', categoryId: 7 })
    const after = await call(service.port, { method: 'POST', path: '/v1/pets', key: KEY, body })
    assert.equal(after.status, 201, after.body)
    const onNewPrimary = await storedPets(servers.standby.url)
    await until('the rewound old primary replays every pet', async () => {
      const replayed = await storedPets(servers.primary.url)
      return JSON.stringify(replayed) === JSON.stringify(onNewPrimary)
    })
    t.diagnostic(
      `${onPrimary} creates answered 201 up to the stop, ${load.count(201)} in all, ` +
        `${load.count(503)} answered 503; first 201 ${Math.round(firstAfter)} ms after RELOAD`,
    )
  })
})
