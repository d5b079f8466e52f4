// The fast lane (src/fast-lane/) is invisible: two apps on one store, one with it and one
// without (PETSTORE_HOT_PATH=false), get the same requests over real sockets, and every answer
// must match the other's byte for byte: status, header names in order, header values, body, and
// the request's log lines. The metric of fast-lane answers shows which requests it took. Runs on
// both stores.
import assert from 'node:assert/strict'
import { request } from 'node:http'
import { describe, type TestContext, test } from 'node:test'
import type { Config } from '../../src/config.js'
import {
  hotAnswers,
  type LaneAndRoutes,
  laneAndRoutes,
  type ServedApp,
} from '../support/lane-and-routes.js'
import { exchange, rawRequest } from '../support/raw-http.js'
import { forStore } from '../support/stores.js'

interface Answer {
  status: number
  /** Names and values in the order they came, `date` left out. */
  headers: [string, string][]
  body: string
}

const ORIGIN = 'https://app.example.com'

/** The lane and the routes, every deprecated call logged, so each request's lines compare. */
function pair(t: TestContext, config: Partial<Config> = {}): Promise<LaneAndRoutes> {
  return laneAndRoutes(t, { corsOrigins: [ORIGIN], deprecatedCallLogIntervalMs: 0, ...config })
}

function send(
  port: number,
  method: string,
  path: string,
  headers: Record<string, string>,
  /** Pieces are written one by one, without Content-Length (chunked). */
  body?: string | Buffer | string[],
): Promise<Answer> {
  return new Promise((resolve, reject) => {
    const req = request({ host: '127.0.0.1', port, method, path, headers }, (res) => {
      const chunks: Buffer[] = []
      res.on('data', (c: Buffer) => chunks.push(c))
      res.on('end', () => {
        const pairs: [string, string][] = []
        for (let i = 0; i < res.rawHeaders.length; i += 2) {
          const name = res.rawHeaders[i]!
          if (name.toLowerCase() !== 'date') pairs.push([name, res.rawHeaders[i + 1]!])
        }
        resolve({ status: res.statusCode!, headers: pairs, body: Buffer.concat(chunks).toString() })
      })
    })
    req.on('error', reject)
    if (Array.isArray(body)) {
      for (const piece of body) req.write(piece)
      req.end()
    } else {
      req.end(body)
    }
  })
}

/**
 * The two apps' rate-limit windows differ by design: their counts, and the seconds left, since each
 * window started at its app's first request (real time, as the limiter runs on). The rest of the
 * field, and everything else, must not.
 */
function comparable(a: Answer): Answer {
  return {
    ...a,
    headers: a.headers.map(([k, v]) => [
      k,
      k === 'ratelimit' ? v.replace(/;r=\d+;t=\d+$/, ';r=N;t=T') : v,
    ]),
  }
}

/** One HTTP/1.1 request with the key, and a JSON body when one is given. */
function keyedRequest(method: string, path: string, key: string, body?: string): string {
  const headers: [string, string][] = [
    ['Host', 'petstore.test'],
    ['Authorization', `Bearer ${key}`],
  ]
  if (body !== undefined) headers.push(['Content-Type', 'application/json'])
  return rawRequest(method, path, headers, body)
}

/**
 * Writes the requests on one connection with one write, so that the server reads them in one turn
 * of its event loop, and resolves with the answers in their order.
 */
async function pipelined(
  port: number,
  requests: string[],
): Promise<{ status: number; body: string }[]> {
  const x = await exchange(port, requests.join(''), { answers: requests.length })
  return x.answers.map(({ status, body }) => ({ status, body }))
}

/** The request's log lines without what differs between two processes' runs of it. */
function logged(s: ServedApp, from: number): unknown[] {
  return s.logs.slice(from).map((line) => {
    const { time: _t, pid: _p, hostname: _h, durationMs, ...rest } = JSON.parse(line)
    assert.equal(typeof durationMs === 'number' || durationMs === undefined, true)
    // Each app counts its own calls of the deprecated operation.
    if (rest.callsByKey !== undefined) rest.callsByKey = 'N'
    // An unexpected error's stack shows which path it came through.
    if (rest.err?.stack !== undefined) rest.err.stack = 'STACK'
    return rest
  })
}

interface Case {
  method?: string
  path: string
  headers?: Record<string, string>
  /** Whether the lane answers it once its page is cached and its key remembered. */
  hot: boolean
}

/**
 * Sends the request to the plain app once and to the hot app twice (the first may fill a cache),
 * asserts the three answers and their log lines are the same, and that the hot app's second
 * answer came from the lane exactly when `c.hot` says so. Returns the plain app's answer.
 */
async function same(p: LaneAndRoutes, c: Case): Promise<Answer> {
  const method = c.method ?? 'GET'
  const headers = {
    authorization: `Bearer ${p.key}`,
    'x-request-id': 'req-1',
    host: 'petstore.test:8080',
    ...c.headers,
  }
  const plainLogs = p.plain.logs.length
  const expected = await send(p.plain.port, method, c.path, headers)
  await new Promise((r) => setImmediate(r))
  const expectedLog = logged(p.plain, plainLogs)
  for (const round of [1, 2]) {
    const before = await hotAnswers(p.hot)
    const hotLogs = p.hot.logs.length
    const actual = await send(p.hot.port, method, c.path, headers)
    await new Promise((r) => setImmediate(r))
    const label = `${method} ${c.path} ${JSON.stringify(c.headers ?? {})} (round ${round})`
    assert.deepEqual(comparable(actual), comparable(expected), label)
    assert.deepEqual(logged(p.hot, hotLogs), expectedLog, label)
    const took = (await hotAnswers(p.hot)) - before
    if (round === 2) assert.equal(took, c.hot ? 1 : 0, `lane answers for ${label}`)
    if (!c.hot) assert.equal(took, 0, `lane answers for ${label}`)
  }
  return expected
}

interface CreateCase {
  body: string | Buffer
  headers?: Record<string, string>
  /** Sent without Content-Length, in chunks. */
  chunked?: boolean
  /** Whether the lane answers it, once the hot app's key is remembered. */
  hot: boolean
}

/**
 * A create's answer with the new pet's id, which differs between the apps, left out: in the body,
 * in Location, and in Content-Length (checked against the body first).
 */
function withoutNewId(a: Answer): Answer {
  const length = a.headers.find(([k]) => k === 'content-length')
  if (length !== undefined) assert.equal(Number(length[1]), Buffer.byteLength(a.body))
  return {
    status: a.status,
    headers: a.headers.map(([k, v]) => [
      k,
      k === 'location' ? v.replace(/\d+$/, 'ID') : k === 'content-length' ? 'LENGTH' : v,
    ]),
    body: a.body.replace(/^\{"id":\d+,/, '{"id":ID,'),
  }
}

function sendCreate(port: number, c: CreateCase, headers: Record<string, string>): Promise<Answer> {
  const text = c.body.toString()
  const body = c.chunked ? [text.slice(0, 5), text.slice(5)] : c.body
  return send(port, 'POST', '/v1/pets', headers, body)
}

/**
 * Sends the create to the plain app and then to the hot app, the hot app's key remembered at the
 * current data version first (a list request), and asserts both answers and their log lines are
 * the same but for the new id, and that the lane answered exactly when `c.hot` says so.
 */
async function sameCreate(p: LaneAndRoutes, c: CreateCase): Promise<Answer> {
  const headers: Record<string, string> = {
    authorization: `Bearer ${p.key}`,
    'x-request-id': 'req-1',
    host: 'petstore.test:8080',
    ...c.headers,
  }
  const label = `POST ${c.body.toString().slice(0, 60)} ${JSON.stringify(c.headers ?? {})}`
  const plainLogs = p.plain.logs.length
  // An Idempotency-Key of its own for each app, or the second would replay the first's pet.
  const forApp = (side: string) =>
    headers['idempotency-key'] === undefined
      ? headers
      : { ...headers, 'idempotency-key': `${headers['idempotency-key']}-${side}` }
  const expected = await sendCreate(p.plain.port, c, forApp('plain'))
  await new Promise((r) => setImmediate(r))
  const expectedLog = logged(p.plain, plainLogs)
  await send(p.hot.port, 'GET', '/v1/pets?limit=1', { authorization: `Bearer ${p.key}` })
  const before = await hotAnswers(p.hot)
  const hotLogs = p.hot.logs.length
  const actual = await sendCreate(p.hot.port, c, forApp('hot'))
  await new Promise((r) => setImmediate(r))
  assert.deepEqual(comparable(withoutNewId(actual)), comparable(withoutNewId(expected)), label)
  assert.deepEqual(logged(p.hot, hotLogs), expectedLog, label)
  assert.equal((await hotAnswers(p.hot)) - before, c.hot ? 1 : 0, `lane answers for ${label}`)
  return expected
}

async function seed(p: LaneAndRoutes, n: number): Promise<void> {
  const statuses = ['available', 'pending', 'sold', undefined]
  for (let i = 0; i < n; i++) {
    const status = statuses[i % statuses.length]
    const body = JSON.stringify({
      name: `pet ${i}`,
      categoryId: 100 + i,
      ...(status ? { status } : {}),
    })
    await createOnPlain(p, body)
  }
}

/** Creates a pet through the app without the lane; returns its 201. */
async function createOnPlain(p: LaneAndRoutes, body: string): Promise<Answer> {
  const res = await send(
    p.plain.port,
    'POST',
    '/v1/pets',
    { authorization: `Bearer ${p.key}`, 'content-type': 'application/json' },
    body,
  )
  assert.equal(res.status, 201, res.body)
  return res
}

describe('the lane answers as the routes do', () => {
  test('list and get: plain 200s are taken by the lane, every other request by Fastify, with the same answers', async (t) => {
    const p = await pair(t)
    await seed(p, 30)
    const first = await same(p, { path: '/v1/pets?limit=5', hot: true })
    assert.equal(first.status, 200)
    const link = first.headers.find(([k]) => k === 'link')![1]
    assert.equal(link, '<http://petstore.test:8080/v1/pets?limit=5&cursor=djE6NQ>; rel="next"')
    assert.deepEqual(
      first.headers.map(([k]) => k),
      [
        'x-request-id',
        'cache-control',
        'vary',
        'ratelimit-policy',
        'ratelimit',
        'link',
        'content-type',
        'content-length',
        'Connection',
        'Keep-Alive',
      ],
    )

    const plain200s: Case[] = [
      { path: '/v1/pets', hot: true },
      { path: '/v1/pets?', hot: true },
      { path: '/v1/pets?limit=5&cursor=djE6NQ', hot: true },
      { path: '/v1/pets?limit=3&status=sold', hot: true },
      { path: '/v1/pets?status=available&limit=3', hot: true },
      { path: '/v1/pets?status=pending', hot: true },
      { path: '/v1/pets?limit=100', hot: true },
      { path: '/v1/pets?limit=5', headers: { 'x-request-id': 'client.id:7@x' }, hot: true },
      { path: '/v1/pets?limit=5', headers: { 'x-forwarded-host': 'ignored.example' }, hot: true },
      { path: '/v1/pets/1', hot: true },
      { path: '/v1/pets/4', hot: true },
      { path: '/v1/pets/30', hot: true },
    ]
    for (const c of plain200s) assert.equal((await same(p, c)).status, 200, c.path)

    // Errors of requests the lane takes are its own; what it does not parse, other methods and
    // CORS are Fastify's.
    const others: [Case, number][] = [
      [{ path: '/v1/pets?limit=5&extra=1', hot: false }, 200],
      [{ path: '/v1/pets?limit=%35', hot: false }, 200],
      [{ path: '/v1/pets?limit=5&', hot: false }, 200],
      [{ path: '/v1/pets/%31', hot: false }, 200],
      [{ path: '/v1/pets/1?x=1', hot: false }, 200],
      [{ path: '/v1/pets?limit=5', headers: { origin: ORIGIN }, hot: false }, 200],
      [{ path: '/v1/pets?limit=5', headers: { origin: 'https://other.example' }, hot: false }, 200],
      [{ path: '/v1/pets', method: 'HEAD', hot: false }, 200],
      [{ path: '/v1/pets?limit=0', hot: false }, 400],
      [{ path: '/v1/pets?limit=101', hot: false }, 400],
      [{ path: '/v1/pets?limit=abc', hot: false }, 400],
      [{ path: '/v1/pets?limit=-1', hot: false }, 400],
      [{ path: '/v1/pets?limit=1&limit=2', hot: false }, 400],
      [{ path: '/v1/pets?status=bogus', hot: false }, 400],
      [{ path: '/v1/pets?status=', hot: false }, 400],
      [{ path: '/v1/pets?cursor=', hot: false }, 400],
      [{ path: '/v1/pets?cursor=bm9wZQ', hot: true }, 400],
      [{ path: '/v1/pets/999999', hot: true }, 404],
      [{ path: '/v1/pets/0', hot: true }, 404],
      [{ path: '/v1/pets/-5', hot: true }, 404],
      [{ path: '/v1/pets/abc', hot: false }, 400],
      [{ path: '/v1/pets/007', hot: false }, 400],
      [{ path: '/v1/pets/9223372036854775808', hot: false }, 400],
      [{ path: '/v1/pets/', hot: false }, 400],
      [{ path: '/v1/petsx', hot: false }, 404],
      [{ path: '/v1/pets?limit=5', headers: { authorization: '' }, hot: true }, 401],
      [{ path: '/v1/pets?limit=5', headers: { authorization: 'Bearer nope' }, hot: true }, 401],
      [{ path: '/v1/pets/1', headers: { authorization: 'Basic eDp5' }, hot: true }, 401],
      [{ path: '/v1/pets?limit=5', headers: { 'content-length': '0' }, hot: false }, 200],
      [{ path: '/v1/pets?limit=5', headers: { host: 'example.com:99999999' }, hot: false }, 400],
      [{ path: '/v1/pets/1', headers: { host: '-evil' }, hot: false }, 400],
      [{ path: '/v1/pets?limit=5', headers: { 'content-encoding': 'gzip' }, hot: false }, 415],
      [{ path: '/v1/pets/1', headers: { 'content-encoding': 'br' }, hot: false }, 415],
      [{ path: '/v1/pets/1', headers: { 'content-encoding': 'identity' }, hot: false }, 200],
    ]
    for (const [c, status] of others) {
      assert.equal((await same(p, c)).status, status, `${c.method ?? 'GET'} ${c.path}`)
    }
  })

  test("get: the pet is byte for byte the route serializer's, whatever its name", async (t) => {
    const p = await pair(t)
    const controls = Array.from({ length: 0x1f }, (_, i) => String.fromCharCode(i + 1)).join('')
    const pets: { name: string; categoryId: string; status?: string }[] = [
      { name: `controls ${controls} and DEL \u007f`, categoryId: '9223372036854775807' },
      { name: 'quotes " and \\ backslashes \\" and a / slash', categoryId: '-9223372036854775808' },
      { name: 'é 日本 🐶 \u2028\u2029 \ufeff \u{10ffff}', categoryId: '0', status: 'pending' },
      { name: 'x'.repeat(255), categoryId: '9007199254740993', status: 'sold' },
      { name: '\t\n\r\b\f tab-led', categoryId: '1', status: 'available' },
    ]
    for (const pet of pets) {
      // Written by hand: categoryId as a JSON integer beyond what a number holds.
      const body = `{"name":${JSON.stringify(pet.name)},"categoryId":${pet.categoryId}${pet.status ? `,"status":"${pet.status}"` : ''}}`
      const created = await createOnPlain(p, body)
      const id = (JSON.parse(created.body) as { id: number }).id
      const got = await same(p, { path: `/v1/pets/${id}`, hot: true })
      assert.equal(got.status, 200)
      // The route's own answer to the create, serialized by Fastify, is the same text again.
      assert.equal(got.body, created.body)
    }
  })

  test('a page cached before a create is not served after it; a revoked key is refused at once', async (t) => {
    const p = await pair(t)
    await seed(p, 2)
    const page = { path: '/v1/pets?limit=5', hot: true }
    assert.equal(JSON.parse((await same(p, page)).body).length, 2)
    await seed(p, 1)
    // The create moved the data version: the hot app's first answer must be the fresh page.
    assert.equal(JSON.parse((await same(p, page)).body).length, 3)

    // The hot app remembers the key; a get by id is one the lane could answer (the pet
    // exists), so it is the lane that reads the key's record again after the revocation.
    assert.equal((await same(p, { path: '/v1/pets/1', hot: true })).status, 200)
    await p.sql('UPDATE api_keys SET revoked_at = 1')
    for (const path of ['/v1/pets/1', '/v1/pets?limit=5']) {
      const refused = await same(p, { path, hot: true })
      assert.equal(refused.status, 401, path)
      assert.equal(JSON.parse(refused.body).code, 'unauthorized')
    }
  })

  test('the lists, gets and creates of one turn share one read of the data version, taken once all of them have arrived', async (t) => {
    const p = await pair(t)
    await seed(p, 3)
    const paths = ['/v1/pets/1', '/v1/pets/2', '/v1/pets?limit=2', '/v1/pets/3']
    const raw = (path: string) => keyedRequest('GET', path, p.key)
    const expected: { status: number; body: string }[] = []
    for (const path of paths) {
      const { status, body } = await send(p.plain.port, 'GET', path, {
        authorization: `Bearer ${p.key}`,
      })
      expected.push({ status, body })
    }
    // Once through first, so that the page is cached and the key remembered.
    assert.deepEqual(await pipelined(p.hot.port, paths.map(raw)), expected)

    const readVersion = p.store.dataVersion.bind(p.store)
    let versionReads = 0
    p.store.dataVersion = () => {
      versionReads++
      return readVersion()
    }
    t.after(() => {
      p.store.dataVersion = readVersion
    })
    const before = await hotAnswers(p.hot)
    assert.deepEqual(await pipelined(p.hot.port, paths.map(raw)), expected)
    assert.equal((await hotAnswers(p.hot)) - before, paths.length)
    assert.equal(versionReads, 1)

    // Creates' key checks too: three creates in one write, one read for the three.
    versionReads = 0
    const create = (name: string) =>
      keyedRequest('POST', '/v1/pets', p.key, JSON.stringify({ name, categoryId: 1 }))
    const created = await pipelined(p.hot.port, ['a', 'b', 'c'].map(create))
    assert.deepEqual(
      created.map((a) => [a.status, JSON.parse(a.body).name]),
      [
        [201, 'a'],
        [201, 'b'],
        [201, 'c'],
      ],
    )
    assert.equal((await hotAnswers(p.hot)) - before, paths.length + 3)
    assert.equal(versionReads, 1)

    // A page not cached is read from the store in the lane, at the turn's version.
    versionReads = 0
    const handed = await pipelined(p.hot.port, [raw('/v1/pets?limit=3'), raw('/v1/pets/1')])
    assert.deepEqual(
      handed.map((a) => a.status),
      [200, 200],
    )
    assert.equal(JSON.parse(handed[0]!.body).length, 3)
    assert.equal(versionReads, 1)
  })

  // SQLite commits synchronously, so another connection's commit can be made inside the turn, once
  // the request is in; on PostgreSQL it would land in a later turn.
  forStore('sqlite', () => {
    test('the version is read after the requests arrived: a commit made once one is in is in its answer', async (t) => {
      const p = await pair(t)
      await seed(p, 1)
      const raw = (path: string) => keyedRequest('GET', path, p.key)
      // The key remembered and the pet cached by a first answer.
      assert.equal((await pipelined(p.hot.port, [raw('/v1/pets/1')]))[0]!.status, 200)
      const before = await hotAnswers(p.hot)
      // The commit revokes the key.
      const revoke = () => void p.sql('UPDATE api_keys SET revoked_at = 1')
      p.hot.app.server.once('request', revoke)
      const refused = await pipelined(p.hot.port, [raw('/v1/pets/1')])
      assert.equal(refused[0]!.status, 401)
      assert.equal(JSON.parse(refused[0]!.body).code, 'unauthorized')
      assert.equal(await hotAnswers(p.hot), before + 1)
    })
  })

  test('get: the lane logs deprecated calls at the interval, as Fastify does', async (t) => {
    const p = await pair(t, { deprecatedCallLogIntervalMs: 60_000 })
    await seed(p, 1)
    const get = async () => {
      const res = await send(p.hot.port, 'GET', '/v1/pets/1', { authorization: `Bearer ${p.key}` })
      assert.equal(res.status, 200)
    }
    const counts = () =>
      p.hot.logs
        .map((line) => JSON.parse(line))
        .filter((l) => l.msg === 'deprecated operation called')
        .map((l) => l.callsByKey)
    for (let i = 0; i < 3; i++) await get()
    assert.deepEqual(counts(), [1])
    p.clock.advance(60_000)
    await get()
    await get()
    assert.deepEqual(counts(), [1, 4])
    assert.equal(await hotAnswers(p.hot), 5)
  })

  test('a used-up budget is refused with 429 by the lane as by the routes', async (t) => {
    const p = await pair(t, { rateLimitMax: 3 })
    await seed(p, 1) // the creates went to the plain app: the hot app's budget is whole
    const statuses: number[] = []
    for (let i = 0; i < 5; i++) {
      const res = await send(p.hot.port, 'GET', '/v1/pets/1', { authorization: `Bearer ${p.key}` })
      statuses.push(res.status)
      if (res.status === 429) {
        assert.equal(JSON.parse(res.body).code, 'rate_limited')
        assert.match(res.headers.find(([k]) => k === 'ratelimit')![1], /^"default";r=0;t=\d+$/)
      }
    }
    assert.deepEqual(statuses, [200, 200, 200, 429, 429])
    // One deprecation line per answered call, whichever path answered it, with the running count.
    const counts = p.hot.logs
      .map((line) => JSON.parse(line))
      .filter((l) => l.msg === 'deprecated operation called')
      .map((l) => l.callsByKey)
    assert.deepEqual(counts, [1, 2, 3])
    assert.equal(await hotAnswers(p.hot), 5)
  })

  test('create: a plain JSON create is the lane’s whatever its body, every other one Fastify’s, with the same answers', async (t) => {
    const p = await pair(t)
    const json = { 'content-type': 'application/json' }
    const cases: [CreateCase, number][] = [
      [{ body: '{"name":"rex","categoryId":9007199254740993,"status":"sold"}', hot: true }, 201],
      [{ body: '{ "categoryId": 7, "name": "no status" }', hot: true }, 201],
      [
        { body: '{"name":"a","categoryId":1}', headers: { 'x-request-id': 'mine-1' }, hot: true },
        201,
      ],
      // Bodies the route refuses, refused by the lane with the route's parser and validator.
      [{ body: '{"name":"a","categoryId":12345678901234567890}', hot: true }, 400],
      [{ body: '{"name":"","categoryId":1}', hot: true }, 400],
      [{ body: '{"name":"a"}', hot: true }, 400],
      [{ body: '{"name":"a","categoryId":1,"extra":true}', hot: true }, 400],
      [{ body: '{"name":"a","categoryId":1.0}', hot: true }, 400],
      [{ body: '{"name":"a","categoryId":"1"}', hot: true }, 400],
      [{ body: '{"name":"a\\u0000b","categoryId":1}', hot: true }, 400],
      [{ body: '{"name":"\\ud800","categoryId":1}', hot: true }, 400],
      [{ body: '{"name":"a","categoryId":1', hot: true }, 400],
      [{ body: '[]', hot: true }, 400],
      [{ body: Buffer.from([0x7b, 0x22, 0xff, 0x22, 0x7d]), hot: true }, 400],
      // Keys the lane has not seen: Fastify refuses them before reading the body.
      [
        {
          body: '{"name":"a","categoryId":1}',
          headers: { authorization: 'Bearer nope' },
          hot: false,
        },
        401,
      ],
      [{ body: '{"name":"a","categoryId":1}', headers: { authorization: '' }, hot: false }, 401],
      // Headers that leave the request to Fastify untouched.
      [
        {
          body: '{"name":"a","categoryId":1}',
          headers: { 'content-type': 'application/json; charset=utf-8' },
          hot: false,
        },
        201,
      ],
      [
        {
          body: '{"name":"a","categoryId":1}',
          headers: { 'content-type': 'text/plain' },
          hot: false,
        },
        415,
      ],
      [
        { body: '{"name":"a","categoryId":1}', headers: { 'idempotency-key': 'k-1' }, hot: false },
        201,
      ],
      [{ body: '{"name":"a","categoryId":1}', headers: { origin: ORIGIN }, hot: false }, 201],
      [{ body: '{"name":"a","categoryId":1}', chunked: true, hot: false }, 201],
      [{ body: `{"name":"a","categoryId":1,"x":"${'y'.repeat(70_000)}"}`, hot: false }, 413],
    ]
    for (const [c, status] of cases) {
      const answer = await sameCreate(p, { ...c, headers: { ...json, ...c.headers } })
      assert.equal(answer.status, status, `${c.body.slice(0, 60)} ${JSON.stringify(c.headers)}`)
    }
    // Every 201 created exactly one pet: 2 per case (one per app), nothing for the others.
    const created = cases.filter(([, status]) => status === 201).length * 2
    const list = await send(p.plain.port, 'GET', '/v1/pets?limit=100', {
      authorization: `Bearer ${p.key}`,
    })
    assert.equal(JSON.parse(list.body).length, created)
  })

  test('create: the budget is counted once whichever path answers, and a store failure is answered as the routes answer it', async (t) => {
    const p = await pair(t, { rateLimitMax: 4 })
    const json = { 'content-type': 'application/json' }
    const body = '{"name":"a","categoryId":1}'
    // Each app: one list (it remembers the key), one bad body, then creates until the budget of 4
    // is used up.
    const fields: Record<'hot' | 'plain', string[]> = { hot: [], plain: [] }
    for (const side of ['plain', 'hot'] as const) {
      const port = p[side].port
      const auth = { authorization: `Bearer ${p.key}` }
      const answers = [await send(port, 'GET', '/v1/pets?limit=1', auth)]
      answers.push(await send(port, 'POST', '/v1/pets', { ...auth, ...json }, '{"name":""}'))
      for (let i = 0; i < 3; i++) {
        answers.push(await send(port, 'POST', '/v1/pets', { ...auth, ...json }, body))
      }
      fields[side] = answers.map(
        (a) =>
          `${a.status} ${a.headers.find(([k]) => k === 'ratelimit')![1].replace(/;t=\d+$/, '')}`,
      )
    }
    assert.deepEqual(fields.hot, fields.plain)
    assert.deepEqual(fields.hot, [
      '200 "default";r=3',
      '400 "default";r=2',
      '201 "default";r=1',
      '201 "default";r=0',
      '429 "default";r=0',
    ])
    assert.equal(await hotAnswers(p.hot), 5)

    const q = await pair(t)
    await send(q.hot.port, 'GET', '/v1/pets?limit=1', { authorization: `Bearer ${q.key}` })
    // Both ways in, the route's and the lane's, end in createPet.
    const { createPet } = q.store
    q.store.createPet = () => Promise.reject(new Error('disk I/O error'))
    t.after(() => {
      q.store.createPet = createPet
    })
    const failed = await sameCreate(q, { body, headers: json, hot: true })
    assert.equal(failed.status, 500)
    assert.equal(
      failed.body,
      '{"code":"internal_error","message":"internal server error","status":500}',
    )
  })

  test('getPet past its sunset is refused by the lane as by the routes; draining is Fastify’s', async (t) => {
    const p = await pair(t)
    await seed(p, 1)
    p.draining.on = true
    const draining = await same(p, { path: '/v1/pets?limit=5', hot: false })
    assert.deepEqual(
      draining.headers.find(([k]) => k === 'connection'),
      ['connection', 'close'],
    )
    p.draining.on = false
    p.clock.set(new Date('2030-12-05T00:00:00Z'))
    assert.equal((await same(p, { path: '/v1/pets/1', hot: true })).status, 410)
  })

  test('behind a trusted proxy, forwarded lists and gets are the lane’s, with the routes’ Link and client address', async (t) => {
    const p = await pair(t, { trustProxy: ['127.0.0.1'] })
    await seed(p, 10)
    const forwarded = {
      'x-forwarded-for': '198.51.100.7, 203.0.113.9',
      'x-forwarded-proto': 'https',
      'x-forwarded-host': 'public.example',
    }
    const clientOf = () => JSON.parse(p.plain.logs.at(-1)!).remoteAddress
    const list = await same(p, { path: '/v1/pets?limit=5', headers: forwarded, hot: true })
    assert.equal(
      list.headers.find(([k]) => k === 'link')![1],
      '<https://public.example/v1/pets?limit=5&cursor=djE6NQ>; rel="next"',
    )
    assert.equal(clientOf(), '203.0.113.9')
    assert.equal((await same(p, { path: '/v1/pets/1', headers: forwarded, hot: true })).status, 200)
    const long = { 'x-forwarded-for': 'x'.repeat(12_000), 'x-forwarded-proto': 'https' }
    const unforwarded = await same(p, { path: '/v1/pets?limit=5', headers: long, hot: true })
    assert.equal(
      unforwarded.headers.find(([k]) => k === 'link')![1],
      '<http://petstore.test:8080/v1/pets?limit=5&cursor=djE6NQ>; rel="next"',
    )
    assert.equal(clientOf(), '127.0.0.1')
  })
})
