// Authentication is decided by the route that answers, never by the spelling of the target: every
// route is reached through generated spellings of its target (percent-encoding, absolute form,
// dot segments, doubled and encoded slashes, case, trailing slash, `;params`) over a real socket,
// with no key, a wrong key and a valid key.
import assert from 'node:assert/strict'
import type { AddressInfo } from 'node:net'
import { describe, type TestContext, test } from 'node:test'
import fc from 'fast-check'
import { buildApp } from '../../src/app.js'
import { createApiKey } from '../../src/auth/api-keys.js'
import { manualClock } from '../../src/clock.js'
import { configWith } from '../../src/config.js'
import { errorStatus } from '../../src/errors.js'
import { createPet, type TestApp, testApp, testStore } from '../support/app.js'
import { NO_KEY } from '../support/errors.js'
import { exchange, header, type RawAnswer, rawRequest } from '../support/raw-http.js'

interface Route {
  method: string
  path: string
  query?: string
  body?: string
  public: boolean
}

const ROUTES: Route[] = [
  { method: 'GET', path: '/v1/pets', query: '?limit=2', public: false },
  { method: 'POST', path: '/v1/pets', body: '{"name":"Rex","categoryId":7}', public: false },
  { method: 'GET', path: '/v1/pets/1', public: false },
  { method: 'GET', path: '/v1/store/orders', public: false },
  { method: 'GET', path: '/healthz', public: true },
  { method: 'GET', path: '/readyz', public: true },
  { method: 'GET', path: '/v1/openapi.json', public: true },
  { method: 'GET', path: '/docs', public: true },
]

const WRONG_KEY = `pet_000000000000_${'A'.repeat(43)}`

/** A served app on this run's store with three pets, its limits out of the way. */
async function served(t: TestContext): Promise<{ a: TestApp; port: number }> {
  const a = await testApp(t, {
    config: { rateLimitMax: 1_000_000, authFailureLimitMax: 1_000_000 },
  })
  for (const name of ['Ada', 'Bo', 'Cy']) {
    assert.equal((await createPet(a, { name, categoryId: 1 })).statusCode, 201)
  }
  await a.app.listen({ port: 0, host: '127.0.0.1' })
  return { a, port: (a.app.server.address() as AddressInfo).port }
}

function send(port: number, route: Route, target: string, key?: string): Promise<RawAnswer> {
  const headers: [string, string][] = [['Host', 'petstore.test']]
  if (key !== undefined) headers.push(['Authorization', `Bearer ${key}`])
  if (route.body !== undefined) headers.push(['Content-Type', 'application/json'])
  headers.push(['Connection', 'close'])
  return exchange(port, rawRequest(route.method, target, headers, route.body)).then((x) => {
    assert.equal(x.answers.length, 1, `${route.method} ${target}: no answer (${x.error})`)
    return x.answers[0]!
  })
}

/** The Error body of the contract, its status the answer's. */
function assertErrorBody(answer: RawAnswer, what: string): void {
  assert.equal(header(answer, 'content-type'), 'application/json; charset=utf-8', what)
  const body = JSON.parse(answer.body) as { code: keyof typeof errorStatus }
  assert.deepEqual(Object.keys(body).sort(), ['code', 'message', 'status'], what)
  assert.equal(errorStatus[body.code], answer.status, what)
  assert.deepEqual(body, { ...body, status: answer.status }, what)
}

/** What must not depend on the spelling: status and body, but for a created pet's new id. */
function comparable(answer: RawAnswer): unknown {
  if (answer.status !== 201) return { status: answer.status, body: answer.body }
  return { status: 201, body: { ...(JSON.parse(answer.body) as object), id: 'new' } }
}

const slashes = (path: string) => [...path.matchAll(/\//g)].map((m) => m.index!)
const hex = (c: string, upper: boolean) => {
  const h = c.charCodeAt(0).toString(16).padStart(2, '0')
  return `%${upper ? h.toUpperCase() : h}`
}

/** One change to the spelling of a path; `n` and `upper` choose where and how. */
type Change = (path: string, n: number, upper: boolean) => string

const CHANGES: Record<string, Change> = {
  percentEncoding: (p, n, upper) => {
    const i = 1 + (n % (p.length - 1))
    return p.slice(0, i) + hex(p[i]!, upper) + p.slice(i + 1)
  },
  absoluteForm: (p, n, upper) =>
    `${['http', 'https', 'HTTP'][n % 3]}://${upper ? 'EXAMPLE.com' : 'x'}${p}`,
  dotSegment: (p, n) => {
    const at = slashes(p)[n % slashes(p).length]!
    return p.slice(0, at) + (n % 2 === 0 ? '/.' : '/x/..') + p.slice(at)
  },
  doubledSlash: (p, n) => {
    const at = slashes(p)[n % slashes(p).length]!
    return `${p.slice(0, at)}/${p.slice(at)}`
  },
  case: (p, n) => {
    const i = n % p.length
    const c = p[i]!
    return (
      p.slice(0, i) + (c === c.toUpperCase() ? c.toLowerCase() : c.toUpperCase()) + p.slice(i + 1)
    )
  },
  trailingSlash: (p) => `${p}/`,
  params: (p, n) => {
    const ends = [...slashes(p).slice(1), p.length]
    const at = ends[n % ends.length]!
    return `${p.slice(0, at)};v=1${p.slice(at)}`
  },
  encodedSlash: (p, n, upper) => {
    const inner = slashes(p).slice(1)
    if (inner.length === 0) return `${p}${upper ? '%2F' : '%2f'}`
    const at = inner[n % inner.length]!
    return `${p.slice(0, at)}${upper ? '%2F' : '%2f'}${p.slice(at + 1)}`
  },
}

const spelling = fc.array(
  fc.record({
    change: fc.constantFrom(...Object.keys(CHANGES)),
    n: fc.nat(1000),
    upper: fc.boolean(),
  }),
  { minLength: 1, maxLength: 4 },
)

function respell(route: Route, changes: { change: string; n: number; upper: boolean }[]): string {
  let path = route.path
  for (const c of changes) path = CHANGES[c.change]!(path, c.n, c.upper)
  return path + (route.query ?? '')
}

describe('authentication is decided by the route that answers', () => {
  test('the targets that once reached the catalogue without a key are refused', async (t) => {
    const { port } = await served(t)
    const list = ROUTES[0]!
    const create = ROUTES[1]!
    for (const [route, target] of [
      [list, '/%761/pets?limit=2'],
      [list, 'http://x/v1/pets'],
      [create, '/%761/pets'],
      [list, '/v1/%70ets'],
      [ROUTES[2]!, '/v1/pets/%31'],
    ] as const) {
      const answer = await send(port, route, target)
      assert.equal(answer.status, 401, target)
      assert.deepEqual(JSON.parse(answer.body), NO_KEY)
      assert.equal(header(answer, 'www-authenticate'), 'Bearer realm="petstore"')
      assert.equal(header(answer, 'ratelimit-policy'), '"auth-failures";q=1000000;w=60')
    }
  })

  test('an unmatched target that could name an API path needs a key; others are 404', async (t) => {
    const { a, port } = await served(t)
    const list = ROUTES[0]!
    for (const target of [
      '/V1/pets',
      '//v1/pets',
      '/v1/./pets',
      '/x/../v1/nope',
      '/%2576%2531/x',
    ]) {
      assert.equal((await send(port, list, target)).status, 401, target)
      assert.equal((await send(port, list, target, a.key)).status, 404, target)
    }
    const elsewhere = await send(port, list, '/elsewhere/%41')
    assert.equal(elsewhere.status, 404)
    assert.deepEqual(JSON.parse(elsewhere.body), {
      code: 'not_found',
      message: 'no resource at /elsewhere/A',
      status: 404,
    })
    // A client chooses the length of its target; the message repeats at most 256 characters.
    const long = await send(port, list, `/elsewhere/${'A'.repeat(15_000)}`)
    assert.deepEqual(JSON.parse(long.body), {
      code: 'not_found',
      message: `no resource at /elsewhere/${'A'.repeat(256 - '/elsewhere/'.length)}…`,
      status: 404,
    })
  })

  test('a route that does not declare itself public needs a key, wherever it lives', async (t) => {
    const store = await testStore(t)
    const { key } = await createApiKey(store, manualClock(new Date()), 'k')
    const app = await buildApp({ config: configWith({}), store })
    t.after(() => app.close())
    app.get('/reports/daily', async () => ({ secret: true }))
    const get = (url: string, authorization?: string) =>
      app.inject({ method: 'GET', url, headers: authorization ? { authorization } : {} })
    const stranger = await get('/reports/daily')
    assert.equal(stranger.statusCode, 401)
    assert.equal(JSON.parse(stranger.body).code, 'unauthorized')
    assert.equal((await get('/reports/daily', `Bearer ${key}`)).body, '{"secret":true}')
  })

  for (const route of ROUTES) {
    test(`${route.method} ${route.path}: every spelling, with and without a key`, async (t) => {
      const { a, port } = await served(t)
      const plain = comparable(await send(port, route, route.path + (route.query ?? ''), a.key))
      await fc.assert(
        fc.asyncProperty(spelling, async (changes) => {
          const target = respell(route, changes)
          for (const key of [undefined, WRONG_KEY]) {
            const answer = await send(port, route, target, key)
            const what = `${route.method} ${target} ${key ? 'wrong key' : 'no key'}: ${answer.status} ${answer.body}`
            assert.ok(answer.status < 500, what)
            if (!route.public) {
              assert.ok(answer.status >= 400, what)
              assertErrorBody(answer, what)
            }
          }
          const answer = await send(port, route, target, a.key)
          const what = `${route.method} ${target} with the key: ${answer.status} ${answer.body}`
          if (answer.status >= 400 && answer.status < 500) assertErrorBody(answer, what)
          else assert.deepEqual(comparable(answer), plain, what)
        }),
        { numRuns: 60 },
      )
    })
  }
})
