// PostgreSQL going away and coming back. A TCP proxy of the test's own stands between a real
// service process and PostgreSQL, and cuts the line in the ways a network or a database can: the
// port refuses (open connections reset), a black hole (nothing passes and nothing closes), a lost
// reply to one committed insert, idle connections ended by the server. Through all of them the service
// answers within a bound (503 with the Error body and Retry-After, never 500, never a hang),
// loses no acknowledged write, stays up, and recovers by itself when the line is back.
//
// A create that gets 503 is ambiguous when the cut raced its commit: the pet may exist. The answer
// to that is the Idempotency-Key: the retry of a create with the same key gets the pet it made, or
// makes it, so the pet exists exactly once either way.
import assert from 'node:assert/strict'
import { randomBytes } from 'node:crypto'
import { once } from 'node:events'
import net from 'node:net'
import { describe, type TestContext, test } from 'node:test'
import { setTimeout as sleep } from 'node:timers/promises'
import pg from 'pg'
import { listAllPets } from '../../support/api.js'
import { DB_UNREACHABLE, NOT_READY } from '../../support/errors.js'
import { freshPostgresUrl, storedPets } from '../../support/postgres.js'
import { type StartedService, spawnService, startService } from '../../support/process.js'
import { forStore } from '../../support/stores.js'
import { until } from '../../support/wait.js'

const API_KEY = 'outage-test-key-0123456789'
/** "No hang": every answer must come within this, though it normally comes far sooner. */
const ANSWER_BOUND_MS = 10_000

// ---------------------------------------------------------------- the proxy

type Fault = 'refused' | 'black-hole'

interface Link {
  /** The service's side. */
  client: net.Socket
  /** PostgreSQL's side. */
  server: net.Socket
  /** Nothing passes either way, and neither side hears of the other closing. */
  blackHoled: boolean
  /** Replies from PostgreSQL are dropped; the service's messages still reach it. */
  repliesLost: boolean
  /** Bytes of the service's messages not yet framed. */
  pending: Buffer
  startupDone: boolean
  /** The insert statement (`insert-pets`) was sent, and its Sync not yet. */
  sentInsert: boolean
}

/**
 * Forwards 127.0.0.1:<port> to PostgreSQL and breaks the line on demand. It frames the service's
 * messages, only to spot a batch of creates (one statement, `insert-pets`, that takes the insert
 * lock, inserts and commits), and forwards them as they came.
 */
class PostgresProxy {
  private readonly links = new Set<Link>()
  /** Connections accepted during a black hole: never answered. */
  private readonly held = new Set<net.Socket>()
  /** PostgreSQL's side of connections the service closed during a black hole. */
  private readonly stranded = new Set<net.Socket>()
  private state: 'up' | Fault = 'up'
  private loseNextCommitReply = false
  private cutAtLock: { fault: Fault; done: () => void } | null = null
  private listener: net.Server
  port = 0

  private constructor(private readonly target: { host: string; port: number }) {
    this.listener = this.createListener()
  }

  static async start(target: { host: string; port: number }): Promise<PostgresProxy> {
    const proxy = new PostgresProxy(target)
    await proxy.listen(0)
    return proxy
  }

  private createListener(): net.Server {
    return net.createServer((socket) => this.accept(socket))
  }

  private async listen(port: number): Promise<void> {
    this.listener.listen(port, '127.0.0.1')
    await once(this.listener, 'listening')
    this.port = (this.listener.address() as net.AddressInfo).port
  }

  private accept(client: net.Socket): void {
    client.on('error', () => undefined)
    if (this.state === 'black-hole') {
      this.held.add(client)
      client.on('close', () => this.held.delete(client))
      return
    }
    const server = net.connect(this.target)
    server.on('error', () => undefined)
    const link: Link = {
      client,
      server,
      blackHoled: false,
      repliesLost: false,
      pending: Buffer.alloc(0),
      startupDone: false,
      sentInsert: false,
    }
    this.links.add(link)
    client.on('data', (chunk: Buffer) => {
      if (link.blackHoled) return
      const cut = this.inspect(link, chunk)
      server.write(chunk)
      if (cut) this.cut(cut)
    })
    server.on('data', (chunk: Buffer) => {
      if (!link.blackHoled && !link.repliesLost) client.write(chunk)
    })
    // A closed side closes the other, unless a black hole stands between them: then PostgreSQL
    // does not hear of it, and a transaction open there stays open until PostgreSQL ends it.
    client.on('close', () => {
      this.links.delete(link)
      if (link.blackHoled) this.stranded.add(server)
      else server.destroy()
    })
    server.on('close', () => {
      this.stranded.delete(server)
      if (!link.blackHoled) client.destroy()
    })
  }

  /** Frames the service's messages; returns the cut to make once this chunk is forwarded. */
  private inspect(link: Link, chunk: Buffer): Fault | null {
    let cut: Fault | null = null
    let buf = Buffer.concat([link.pending, chunk])
    for (;;) {
      // The startup message has no type byte; every later message has one.
      const head = link.startupDone ? 1 : 0
      if (buf.length < head + 4) break
      const size = head + buf.readInt32BE(head)
      if (buf.length < size) break
      const message = buf.subarray(0, size)
      buf = buf.subarray(size)
      if (!link.startupDone) {
        link.startupDone = true
        continue
      }
      const type = String.fromCharCode(message[0]!)
      // The statement goes as Parse (first time) or Bind ... Sync; PostgreSQL runs it, insert lock
      // and commit included, once Sync is through, and the reply to Sync follows the commit.
      if ((type === 'P' || type === 'B') && message.includes('insert-pets\0')) {
        link.sentInsert = true
      }
      if (type === 'S' && link.sentInsert) {
        link.sentInsert = false
        if (this.cutAtLock) cut = this.cutAtLock.fault
        if (this.loseNextCommitReply) {
          this.loseNextCommitReply = false
          link.repliesLost = true
        }
      }
    }
    link.pending = buf
    return cut
  }

  private cut(fault: Fault): void {
    const { done } = this.cutAtLock!
    this.cutAtLock = null
    if (fault === 'refused') {
      void this.refuse().then(done)
    } else {
      this.blackHole()
      done()
    }
  }

  /**
   * Cuts the line right after a batch of creates was sent, so that the cut finds its statement
   * holding the insert lock (or about to); resolves once cut.
   */
  cutOnceInsertLockRequested(fault: Fault): Promise<void> {
    return new Promise((resolve) => {
      this.cutAtLock = { fault, done: resolve }
    })
  }

  /** The next batch of creates reaches PostgreSQL and commits; its reply, and all after it, are lost. */
  loseReplyToNextInsertCommit(): void {
    this.loseNextCommitReply = true
  }

  /** PostgreSQL is down: the port refuses connections and the open ones are reset. */
  async refuse(): Promise<void> {
    this.state = 'refused'
    const closed = new Promise((resolve) => this.listener.close(resolve))
    for (const link of this.links) {
      link.client.resetAndDestroy()
      link.server.destroy()
    }
    await closed
  }

  /** The network drops everything: no byte passes, no close is heard, new connections hang. */
  blackHole(): void {
    this.state = 'black-hole'
    for (const link of this.links) link.blackHoled = true
  }

  /**
   * The line is back. After a black hole, the service's side of the old connections is closed (the
   * service gave up on them long ago) and PostgreSQL's side is left as it was.
   */
  async restore(): Promise<void> {
    if (this.state === 'refused') {
      this.listener = this.createListener()
      await this.listen(this.port)
    }
    for (const socket of this.held) socket.destroy()
    for (const link of this.links) if (link.blackHoled) link.client.destroy()
    this.state = 'up'
  }

  close(): void {
    this.listener.close()
    for (const link of this.links) {
      link.client.destroy()
      link.server.destroy()
    }
    for (const socket of [...this.held, ...this.stranded]) socket.destroy()
  }
}

// ---------------------------------------------------------------- the service

/** The service's settings here: through the proxy, with short bounds. */
function serviceEnv(databaseUrl: string): Record<string, string> {
  return {
    PETSTORE_DATABASE_URL: databaseUrl,
    PETSTORE_DATABASE_TIMEOUT: '1s',
    PETSTORE_DATABASE_POOL_SIZE: '2',
    PETSTORE_API_KEYS: API_KEY,
    PETSTORE_SHUTDOWN_TIMEOUT: '2s',
    PETSTORE_RATE_LIMIT_MAX: '1000000',
    PETSTORE_LOG_LEVEL: 'warn',
  }
}

const running = (s: StartedService) => s.child.exitCode === null && s.child.signalCode === null

interface Answer {
  status: number
  headers: Headers
  body: unknown
}

async function call(
  s: StartedService,
  method: string,
  path: string,
  opts: { body?: unknown; headers?: Record<string, string> } = {},
): Promise<Answer> {
  try {
    const res = await fetch(`${s.origin}${path}`, {
      method,
      headers: {
        authorization: `Bearer ${API_KEY}`,
        ...(opts.body === undefined ? {} : { 'content-type': 'application/json' }),
        ...opts.headers,
      },
      ...(opts.body === undefined ? {} : { body: JSON.stringify(opts.body) }),
      signal: AbortSignal.timeout(ANSWER_BOUND_MS),
    })
    const text = await res.text()
    return { status: res.status, headers: res.headers, body: text === '' ? null : JSON.parse(text) }
  } catch (err) {
    if ((err as Error).name === 'TimeoutError') {
      assert.fail(`${method} ${path}: no answer within ${ANSWER_BOUND_MS} ms (the service hangs)`)
    }
    await sleep(100)
    if (!running(s)) assert.fail(`${method} ${path}: the service ended:\n${s.stderr()}`)
    throw err
  }
}

/** A 503 with the whole Error body and Retry-After: the database cannot be reached. */
function assertUnavailable(a: Answer, what: string): void {
  assert.equal(a.status, 503, `${what}: ${JSON.stringify(a.body)}`)
  assert.deepEqual(a.body, DB_UNREACHABLE, what)
  assert.equal(a.headers.get('retry-after'), '1', what)
  assert.equal(a.headers.get('content-type'), 'application/json; charset=utf-8', what)
}

// ---------------------------------------------------------------- the database, seen directly

/** How many pets named `name` the database at `url` holds. */
const storedNamed = async (url: string, name: string) =>
  (await storedPets(url)).filter((p) => p.name === name).length

/** A fresh schema, a proxy in front of its PostgreSQL, and the schema's URL through the proxy. */
async function proxiedDatabase(t: TestContext, applicationName?: string) {
  const url = await freshPostgresUrl(t)
  const proxied = new URL(url)
  const target = { host: proxied.hostname, port: Number(proxied.port || 5432) }
  const proxy = await PostgresProxy.start(target)
  t.after(() => proxy.close())
  proxied.hostname = '127.0.0.1'
  proxied.port = String(proxy.port)
  if (applicationName) proxied.searchParams.set('application_name', applicationName)
  return { url, proxy, proxiedUrl: proxied.toString() }
}

async function setUp(t: TestContext, applicationName?: string) {
  const { url, proxy, proxiedUrl } = await proxiedDatabase(t, applicationName)
  const service = await startService(t, { env: serviceEnv(proxiedUrl) })
  return { url, proxy, service }
}

// ---------------------------------------------------------------- load while the line is cut

/** Clients creating pets one after another, each with a name never used before. */
function startLoad(s: StartedService, clients: number) {
  const outcomes: { name: string; answer: Answer }[] = []
  let stopped = false
  let failure: unknown = null
  const loops = Array.from({ length: clients }, async (_, c) => {
    try {
      for (let n = 0; !stopped; n++) {
        const name = `load-${c}-${n}`
        const answer = await call(s, 'POST', '/v1/pets', { body: { name, categoryId: 7 } })
        outcomes.push({ name, answer })
      }
    } catch (err) {
      failure ??= err
      stopped = true
    }
  })
  return {
    outcomes,
    /** How many creates got `status`; throws what stopped a client, if one stopped. */
    count: (status: number) => {
      if (failure !== null) throw failure
      return outcomes.filter((o) => o.answer.status === status).length
    },
    stop: async () => {
      stopped = true
      await Promise.all(loops)
      if (failure !== null) throw failure
    },
  }
}

async function outageUnderLoad(t: TestContext, fault: Fault): Promise<void> {
  const { url, proxy, service } = await setUp(t)

  // Up: creates and lists work.
  assert.deepEqual((await call(service, 'GET', '/readyz')).body, { status: 'ready' })
  for (const name of ['before-1', 'before-2']) {
    const created = await call(service, 'POST', '/v1/pets', { body: { name, categoryId: 1 } })
    assert.equal(created.status, 201)
  }
  const listed = await call(service, 'GET', '/v1/pets')
  assert.equal(listed.status, 200)
  const names = (listed.body as { name: string }[]).map((p) => p.name)
  assert.deepEqual(names, ['before-1', 'before-2'])

  const load = startLoad(service, 6)
  await until('creates succeed under load', () => load.count(201) >= 30)

  // Cut, while a create holds the insert lock.
  let cut = false
  void proxy.cutOnceInsertLockRequested(fault).then(() => {
    cut = true
  })
  await until('a batch of creates is sent, and the line is cut', () => cut)
  await until('creates fail during the outage', () => load.count(503) >= 6)

  const ready = await call(service, 'GET', '/readyz')
  assert.equal(ready.status, 503)
  assert.deepEqual(ready.body, NOT_READY)
  assert.equal((await call(service, 'GET', '/healthz')).status, 200)
  assertUnavailable(await call(service, 'GET', '/v1/pets'), 'listPets')
  assertUnavailable(await call(service, 'GET', '/v1/pets/1'), 'getPet')
  const keyed = { body: { name: 'keyed', categoryId: 9 }, headers: { 'idempotency-key': 'k-1' } }
  assertUnavailable(await call(service, 'POST', '/v1/pets', keyed), 'createPet with a key')

  // Restore: the service finds its way back without a restart.
  const createdBeforeRestore = load.count(201)
  await proxy.restore()
  await until(
    'readiness is back',
    async () => (await call(service, 'GET', '/readyz')).status === 200,
  )
  await until('creates succeed again', () => load.count(201) >= createdBeforeRestore + 20)
  await load.stop()
  assert.ok(running(service), `the service ended:\n${service.stderr()}`)

  // Every create was answered 201 or 503, each with its full body.
  for (const { name, answer } of load.outcomes) {
    if (answer.status === 503) {
      assertUnavailable(answer, name)
      continue
    }
    assert.equal(answer.status, 201, `${name}: ${JSON.stringify(answer.body)}`)
    const { id } = answer.body as { id: number }
    assert.deepEqual(answer.body, { id, name, categoryId: 7 })
    assert.equal(answer.headers.get('location'), `/v1/pets/${id}`)
  }

  // No acknowledged write is lost; none is doubled; a 503 made at most one pet.
  const byName = new Map<string, number[]>()
  for (const r of await storedPets(url)) byName.set(r.name, [...(byName.get(r.name) ?? []), r.id])
  let ambiguous = 0
  for (const { name, answer } of load.outcomes) {
    const ids = byName.get(name) ?? []
    if (answer.status === 201) {
      assert.deepEqual(ids, [(answer.body as { id: number }).id], name)
    } else {
      assert.ok(ids.length <= 1, `${name} was answered 503 and stored ${ids.length} times`)
      ambiguous += ids.length
    }
  }
  t.diagnostic(
    `${fault}: ${load.count(201)} created, ${load.count(503)} answered 503 (${ambiguous} of them committed all the same)`,
  )

  // The create refused during the outage, retried with the same key: made once, then replayed.
  const retried = await call(service, 'POST', '/v1/pets', keyed)
  assert.equal(retried.status, 201, JSON.stringify(retried.body))
  assert.equal(retried.headers.get('idempotent-replayed'), null)
  const replayed = await call(service, 'POST', '/v1/pets', keyed)
  assert.equal(replayed.status, 201)
  assert.equal(replayed.headers.get('idempotent-replayed'), 'true')
  assert.deepEqual(replayed.body, retried.body)
  assert.equal(await storedNamed(url, 'keyed'), 1)

  // The API shows what the database holds.
  assert.deepEqual(await listAllPets(service, API_KEY), await storedPets(url))
}

forStore('postgres', () => {
  describe('postgres outage', () => {
    test('refused: 503 within a bound, no acknowledged write lost, recovery without a restart', (t) =>
      outageUnderLoad(t, 'refused'))

    test('black hole: 503 within a bound, no acknowledged write lost, recovery without a restart', (t) =>
      outageUnderLoad(t, 'black-hole'))

    test('a create whose reply is lost after its commit answers 503; its retry with the same Idempotency-Key gets that pet', async (t) => {
      const { url, proxy, service } = await setUp(t)
      const request = {
        body: { name: 'lost-reply', categoryId: 3, status: 'sold' },
        headers: { 'idempotency-key': 'lost-reply-1' },
      }
      proxy.loseReplyToNextInsertCommit()
      assertUnavailable(await call(service, 'POST', '/v1/pets', request), 'create')
      // The commit reached PostgreSQL: the 503 was about the reply, not the write.
      const stored = (await storedPets(url)).filter((p) => p.name === 'lost-reply')
      assert.equal(stored.length, 1)

      const retry = await call(service, 'POST', '/v1/pets', request)
      assert.equal(retry.status, 201, JSON.stringify(retry.body))
      assert.equal(retry.headers.get('idempotent-replayed'), 'true')
      assert.deepEqual(retry.body, { id: stored[0]!.id, ...request.body })
      assert.equal(await storedNamed(url, 'lost-reply'), 1)
      assert.ok(running(service))
    })

    test('PostgreSQL ending idle connections does not end the service', async (t) => {
      const applicationName = `petstore-outage-${randomBytes(4).toString('hex')}`
      const { url, service } = await setUp(t, applicationName)
      // Both pooled connections open, then idle.
      const answers = await Promise.all(
        Array.from({ length: 6 }, () => call(service, 'GET', '/v1/pets')),
      )
      const statuses = answers.map((a) => a.status)
      assert.deepEqual(statuses, [200, 200, 200, 200, 200, 200])
      const admin = new pg.Client({ connectionString: url })
      await admin.connect()
      t.after(() => admin.end())
      const { rows } = await admin.query<{ ended: boolean }>(
        `SELECT pg_terminate_backend(pid) AS ended FROM pg_stat_activity
       WHERE application_name = $1 AND state = 'idle'`,
        [applicationName],
      )
      assert.ok(rows.length >= 1 && rows.every((r) => r.ended))
      const reported = () =>
        service.stderr().match(/database connection error: terminating connection/g)?.length ?? 0
      await until('each ended connection is reported', () => reported() === rows.length)
      assert.ok(running(service), `the service ended:\n${service.stderr()}`)

      assert.deepEqual((await call(service, 'GET', '/readyz')).body, { status: 'ready' })
      const created = await call(service, 'POST', '/v1/pets', {
        body: { name: 'after', categoryId: 1 },
      })
      assert.equal(created.status, 201)
    })

    for (const fault of ['refused', 'black-hole'] as const) {
      test(`a start with PostgreSQL unreachable (${fault}) fails, saying so`, async (t) => {
        const { proxy, proxiedUrl } = await proxiedDatabase(t)
        if (fault === 'refused') await proxy.refuse()
        else proxy.blackHole()
        const proc = spawnService(t, { env: serviceEnv(proxiedUrl) })
        const tooLong = sleep(ANSWER_BOUND_MS, 'still running', { ref: false })
        assert.deepEqual(await Promise.race([proc.exited, tooLong]), { code: 1, signal: null })
        assert.equal(proc.stdout(), '')
        assert.match(
          proc.stderr(),
          new RegExp(
            `^petstore: PostgreSQL at 127\\.0\\.0\\.1:${proxy.port} is not reachable \\(.+\\)\n$`,
          ),
        )
      })
    }
  })
})
