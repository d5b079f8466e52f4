// CORS as a browser meets it: preflights answered without a key, the actual requests (errors
// included) readable by allowed origins only, and nothing at all when no origin is configured.
import assert from 'node:assert/strict'
import { describe, type TestContext, test } from 'node:test'
import type { LightMyRequestResponse } from 'fastify'
import { createPet, json, testApp } from '../support/app.js'
import { assertAnswered, errorBody, NO_KEY } from '../support/errors.js'

const ALLOWED = 'https://app.example.com'
const ALSO_ALLOWED = 'http://localhost:5173'
const OTHER = 'https://evil.example.net'
const EXPOSED =
  'Link, Location, Deprecation, Sunset, RateLimit, RateLimit-Policy, Retry-After, X-Request-Id, Idempotent-Replayed'
const OPTIONS_NOT_ALLOWED = errorBody(
  405,
  'method_not_allowed',
  'OPTIONS is not allowed here; use GET, HEAD, POST',
)

function corsApp(t: TestContext) {
  return testApp(t, { config: { corsOrigins: [ALLOWED, ALSO_ALLOWED] } })
}

/** The response's CORS headers, by lower-case name. */
function corsHeaders(res: LightMyRequestResponse): Record<string, unknown> {
  return Object.fromEntries(
    Object.entries(res.headers).filter(([name]) => name.startsWith('access-control-')),
  )
}

function preflight(origin: string, method = 'POST') {
  return {
    method: 'OPTIONS' as const,
    url: '/v1/pets',
    headers: {
      origin,
      'access-control-request-method': method,
      'access-control-request-headers': 'authorization,content-type,idempotency-key',
    },
  }
}

describe('CORS preflight', () => {
  test('from an allowed origin: 204 without a key, with methods, headers and max-age', async (t) => {
    const { app } = await corsApp(t)
    const res = await app.inject(preflight(ALLOWED))
    assert.equal(res.statusCode, 204)
    assert.equal(res.body, '')
    assert.deepEqual(corsHeaders(res), {
      'access-control-allow-origin': ALLOWED,
      'access-control-allow-methods': 'GET, POST, HEAD',
      'access-control-allow-headers': 'Authorization, Content-Type, Idempotency-Key, X-Request-Id',
      'access-control-expose-headers': EXPOSED,
      'access-control-max-age': '7200',
    })
    assert.equal(res.headers.vary, 'Origin')
    assert.equal(res.headers['access-control-allow-credentials'], undefined)
    assert.match(String(res.headers['x-request-id']), /^[0-9a-f-]{36}$/)
    // A preflight is not an API call: no rate-limit fields, nothing counted.
    assert.equal(res.headers.ratelimit, undefined)
  })

  test('each allowed origin is echoed back as itself, for any path', async (t) => {
    const { app } = await corsApp(t)
    const res = await app.inject(preflight(ALSO_ALLOWED, 'GET'))
    assert.equal(res.statusCode, 204)
    assert.equal(res.headers['access-control-allow-origin'], ALSO_ALLOWED)
    const other = await app.inject({ ...preflight(ALLOWED, 'GET'), url: '/v1/pets/12' })
    assert.equal(other.statusCode, 204)
    assert.equal(other.headers['access-control-allow-origin'], ALLOWED)
  })

  test('from another origin: no CORS headers, treated like any OPTIONS (401 without a key)', async (t) => {
    const { app } = await corsApp(t)
    const res = await app.inject(preflight(OTHER))
    assert.equal(res.statusCode, 401)
    assert.deepEqual(json(res), NO_KEY)
    assert.deepEqual(corsHeaders(res), {})
    assert.equal(res.headers.vary, 'Origin')
  })

  test('an origin differing only in scheme or port is another origin', async (t) => {
    const { app } = await corsApp(t)
    for (const origin of ['http://app.example.com', 'https://app.example.com:8443', 'null']) {
      const res = await app.inject(preflight(origin))
      assert.equal(res.statusCode, 401, origin)
      assert.deepEqual(corsHeaders(res), {}, origin)
    }
  })

  test('an OPTIONS with Origin but no Access-Control-Request-Method is no preflight', async (t) => {
    const withKey = await corsApp(t)
    const res = await withKey.call({
      method: 'OPTIONS',
      url: '/v1/pets',
      headers: { origin: ALLOWED },
    })
    assert.equal(res.statusCode, 405)
    assert.deepEqual(json(res), OPTIONS_NOT_ALLOWED)
    assert.equal(res.headers.allow, 'GET, HEAD, POST')
    assert.equal(res.headers['access-control-allow-origin'], ALLOWED)
    assert.equal(res.headers['access-control-allow-methods'], undefined)
  })
})

describe('CORS on actual requests', () => {
  test('GET from an allowed origin carries the origin, Vary and the exposed headers', async (t) => {
    const a = await corsApp(t)
    await createPet(a, { name: 'Rex', categoryId: 1 })
    await createPet(a, { name: 'Tom', categoryId: 2 })
    const res = await a.call({
      method: 'GET',
      url: '/v1/pets?limit=1',
      headers: { origin: ALLOWED },
    })
    assert.equal(res.statusCode, 200)
    assert.deepEqual(json(res), [{ id: 1, name: 'Rex', categoryId: 1 }])
    assert.deepEqual(corsHeaders(res), {
      'access-control-allow-origin': ALLOWED,
      'access-control-expose-headers': EXPOSED,
    })
    assert.equal(res.headers.vary, 'Origin')
    // The headers a script reads through the exposure are there to read.
    assert.match(String(res.headers.link), /rel="next"$/)
    assert.equal(res.headers['ratelimit-policy'], '"default";q=6000;w=60')
  })

  test('POST from an allowed origin exposes Location', async (t) => {
    const a = await corsApp(t)
    const res = await a.call({
      method: 'POST',
      url: '/v1/pets',
      headers: { origin: ALLOWED, 'content-type': 'application/json' },
      payload: '{"name":"Rex","categoryId":9007199254740993}',
    })
    assert.equal(res.statusCode, 201)
    assert.equal(res.body, '{"id":1,"name":"Rex","categoryId":9007199254740993}')
    assert.equal(res.headers.location, '/v1/pets/1')
    assert.equal(res.headers['access-control-allow-origin'], ALLOWED)
    assert.equal(res.headers['access-control-expose-headers'], EXPOSED)
  })

  test('the actual request still needs a key; its 401 is readable by the allowed origin', async (t) => {
    const { app } = await corsApp(t)
    const res = await app.inject({ method: 'GET', url: '/v1/pets', headers: { origin: ALLOWED } })
    assert.equal(res.statusCode, 401)
    assert.deepEqual(json(res), NO_KEY)
    assert.equal(res.headers['www-authenticate'], 'Bearer realm="petstore"')
    assert.deepEqual(corsHeaders(res), {
      'access-control-allow-origin': ALLOWED,
      'access-control-expose-headers': EXPOSED,
    })
  })

  test('a 404 Error body from an allowed origin carries the CORS headers too', async (t) => {
    const a = await corsApp(t)
    const res = await a.call({ method: 'GET', url: '/v1/pets/77', headers: { origin: ALLOWED } })
    assertAnswered(res, errorBody(404, 'not_found', 'no pet with id 77'))
    assert.equal(res.headers['access-control-allow-origin'], ALLOWED)
  })

  test('GET from another origin gets its answer without any CORS header', async (t) => {
    const a = await corsApp(t)
    const res = await a.call({ method: 'GET', url: '/v1/pets', headers: { origin: OTHER } })
    assert.equal(res.statusCode, 200)
    assert.equal(res.body, '[]')
    assert.deepEqual(corsHeaders(res), {})
  })

  test('a request without Origin gets no CORS header but Vary: Origin', async (t) => {
    const a = await corsApp(t)
    const res = await a.call({ method: 'GET', url: '/v1/pets' })
    assert.equal(res.statusCode, 200)
    assert.deepEqual(corsHeaders(res), {})
    assert.equal(res.headers.vary, 'Origin')
  })
})

describe('CORS off (the default)', () => {
  test('no Access-Control-* header on a preflight; OPTIONS is 401 without a key, 405 with one', async (t) => {
    const a = await testApp(t)
    assert.deepEqual(a.config.corsOrigins, [])
    const anonymous = await a.app.inject(preflight(ALLOWED))
    assert.equal(anonymous.statusCode, 401)
    assert.deepEqual(json(anonymous), NO_KEY)
    assert.deepEqual(corsHeaders(anonymous), {})

    const withKey = await a.call(preflight(ALLOWED))
    assert.equal(withKey.statusCode, 405)
    assert.deepEqual(json(withKey), OPTIONS_NOT_ALLOWED)
    assert.equal(withKey.headers.allow, 'GET, HEAD, POST')
    assert.deepEqual(corsHeaders(withKey), {})
  })

  test('no Access-Control-* header and no Vary on a GET with Origin', async (t) => {
    const a = await testApp(t)
    const res = await a.call({ method: 'GET', url: '/v1/pets', headers: { origin: ALLOWED } })
    assert.equal(res.statusCode, 200)
    assert.equal(res.body, '[]')
    assert.deepEqual(corsHeaders(res), {})
    assert.equal(res.headers.vary, undefined)
  })
})
