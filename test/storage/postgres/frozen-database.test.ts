// A PostgreSQL server that stops answering without closing anything (SIGSTOP: a dead disk, a
// paused VM): every answer that needs it comes within PETSTORE_DATABASE_TIMEOUT and a 20% margin,
// whatever waits it stacks (the data version shared with other requests, a connection, the query,
// the claim of an Idempotency-Key, the create), directly and through PgBouncer. Once the server
// runs again, the service serves again, and a keyed create's retry finds exactly one pet.
import assert from 'node:assert/strict'
import { describe, type TestContext, test } from 'node:test'
import { setTimeout as sleep } from 'node:timers/promises'
import { startOwnPostgres } from '../../support/own-postgres.js'
import { startPgBouncer } from '../../support/pgbouncer.js'
import { storedPets } from '../../support/postgres.js'
import { startService } from '../../support/process.js'
import { forStore } from '../../support/stores.js'
import { until } from '../../support/wait.js'

const API_KEY = 'frozen-database-key-0123456789'
const TIMEOUT_MS = 2000
const BOUND_MS = TIMEOUT_MS * 1.2

interface Call {
  what: string
  path: string
  method?: string
  headers?: Record<string, string>
  body?: string
}

const create = (what: string, name: string, headers = {}): Call => ({
  what,
  path: '/v1/pets',
  method: 'POST',
  headers: { 'content-type': 'application/json', ...headers },
  body: JSON.stringify({ name, categoryId: 1 }),
})
const calls = (wave: string): Call[] => [
  { what: 'list', path: '/v1/pets' },
  { what: 'list by status, a page on', path: '/v1/pets?status=sold&limit=1&cursor=djE6MQ' },
  { what: 'get', path: '/v1/pets/1' },
  create('create', `plain-${wave}`),
  create('create with an Idempotency-Key', `keyed-${wave}`, { 'idempotency-key': `keyed-${wave}` }),
  { what: 'readiness', path: '/readyz' },
]

async function timed(origin: string, call: Call) {
  const started = performance.now()
  const response = await fetch(`${origin}${call.path}`, {
    method: call.method ?? 'GET',
    headers: { authorization: `Bearer ${API_KEY}`, ...call.headers },
    body: call.body,
  })
  await response.arrayBuffer()
  return { what: call.what, status: response.status, ms: performance.now() - started }
}

async function frozenThenThawed(t: TestContext, viaPgBouncer: boolean) {
  const server = await startOwnPostgres(t)
  const bouncer = viaPgBouncer ? await startPgBouncer(t, { server: server.url }) : null
  const url = bouncer ? bouncer.through(server.url) : server.url
  const service = await startService(t, {
    env: {
      PETSTORE_DATABASE_URL: url,
      PETSTORE_DATABASE_TIMEOUT: `${TIMEOUT_MS}ms`,
      PETSTORE_API_KEYS: API_KEY,
      PETSTORE_RATE_LIMIT_MAX: '1000000',
      PETSTORE_LOG_LEVEL: 'warn',
    },
  })
  // Every path warm: connections open, statements prepared, caches filled.
  for (const call of calls('warm')) assert.ok((await timed(service.origin, call)).status < 500)
  assert.equal((await timed(service.origin, calls('warm')[0]!)).status, 200)

  server.freeze()
  t.after(() => server.thaw())
  // A first wave, and a second while the first waits: those join reads already in flight.
  const first = Promise.all(calls('first').map((c) => timed(service.origin, c)))
  await sleep(TIMEOUT_MS / 2)
  const second = Promise.all(calls('second').map((c) => timed(service.origin, c)))
  const answers = [...(await first), ...(await second)]
  for (const a of answers) {
    assert.equal(a.status, 503, `${a.what} while the database is frozen`)
    assert.ok(a.ms <= BOUND_MS, `${a.what} answered in ${Math.round(a.ms)} ms, over ${BOUND_MS}`)
  }

  server.thaw()
  await until('the service serves again', async () => {
    return (await timed(service.origin, calls('after')[0]!)).status === 200
  })
  // The keyed creates: their retry gets the pet their statement made, or makes it; never two.
  for (const wave of ['first', 'second']) {
    const keyed = calls(wave)[4]!
    let retry = await timed(service.origin, keyed)
    while (retry.status === 409) retry = await timed(service.origin, keyed)
    assert.equal(retry.status, 201, `the retry of the keyed create of the ${wave} wave`)
    const stored = (await storedPets(url)).filter((p) => p.name === `keyed-${wave}`)
    assert.equal(stored.length, 1)
  }
}

forStore('postgres', () => {
  describe('postgres: a frozen database (SIGSTOP)', () => {
    test('directly: every answer within the timeout and 20%', (t) => frozenThenThawed(t, false))
    test('through PgBouncer: every answer within the timeout and 20%', (t) =>
      frozenThenThawed(t, true))
  })
})
