import assert from 'node:assert/strict'
import type { IncomingMessage } from 'node:http'
import { connect } from 'node:net'
import { describe, test } from 'node:test'
import { createApiKey } from '../../src/auth/api-keys.js'
import { requestId } from '../../src/http/request-id.js'
import { json, testApp } from '../support/app.js'
import { storeIndependent } from '../support/stores.js'

const V4_UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-4[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$/

const unauthorized = (message: string) => ({ code: 'unauthorized', message, status: 401 })
const MISSING = 'an API key is required: send Authorization: Bearer <key>'
const INVALID = 'the API key is not valid (unknown, revoked or expired)'

/** Sends raw bytes over a real socket and returns the whole response text. */
function rawRequest(port: number, bytes: string): Promise<string> {
  return new Promise((resolve, reject) => {
    const socket = connect(port, '127.0.0.1')
    let out = ''
    socket.on('data', (d) => {
      out += d.toString('latin1')
    })
    socket.on('end', () => resolve(out))
    socket.on('error', reject)
    socket.write(bytes)
  })
}

function parseRaw(text: string) {
  const [head, body = ''] = text.split('\r\n\r\n')
  const [statusLine, ...lines] = head!.split('\r\n')
  const headers = Object.fromEntries(
    lines.map((l) => [
      l.slice(0, l.indexOf(':')).toLowerCase(),
      l.slice(l.indexOf(':') + 1).trim(),
    ]),
  )
  return { status: Number(statusLine!.split(' ')[1]), headers, body }
}

describe('authentication', () => {
  test('no credentials: 401 with a plain challenge, on every /v1 path', async (t) => {
    const a = await testApp(t)
    const requests = [
      { method: 'GET', url: '/v1/pets' },
      { method: 'POST', url: '/v1/pets' },
      { method: 'GET', url: '/v1/pets/abc' },
      { method: 'GET', url: '/v1/unknown/path' },
      { method: 'DELETE', url: '/v1/pets' },
      { method: 'GET', url: '/v1/store/orders' },
    ] as const
    for (const r of requests) {
      const res = await a.app.inject(r)
      assert.equal(res.statusCode, 401, `${r.method} ${r.url}`)
      assert.deepEqual(json(res), unauthorized(MISSING))
      assert.equal(res.headers['www-authenticate'], 'Bearer realm="petstore"')
      assert.equal(res.headers['cache-control'], 'no-store')
    }
  })

  test('auth comes before body checks: a bad body without a key is 401, not 400/415/413', async (t) => {
    const a = await testApp(t)
    const res = await a.app.inject({
      method: 'POST',
      url: '/v1/pets',
      headers: { 'content-type': 'text/plain' },
      payload: 'x'.repeat(100_000),
    })
    assert.equal(res.statusCode, 401)
    assert.deepEqual(json(res), unauthorized(MISSING))
  })

  test('a key that is sent but not valid gets error="invalid_token"', async (t) => {
    const a = await testApp(t)
    const bogus = `pet_${a.keyId}_${'A'.repeat(43)}`
    for (const authorization of [`Bearer ${bogus}`, 'Bearer nope', 'Bearer ', 'bearer x y']) {
      const res = await a.app.inject({ method: 'GET', url: '/v1/pets', headers: { authorization } })
      assert.equal(res.statusCode, 401, authorization)
      assert.deepEqual(json(res), unauthorized(INVALID), authorization)
      assert.equal(
        res.headers['www-authenticate'],
        'Bearer realm="petstore", error="invalid_token"',
      )
    }
    // Another scheme carries no bearer credentials at all.
    const basic = await a.app.inject({
      method: 'GET',
      url: '/v1/pets',
      headers: { authorization: 'Basic dXNlcjpwYXNz' },
    })
    assert.deepEqual(json(basic), unauthorized(MISSING))
  })

  test('the scheme word is case-insensitive', async (t) => {
    const a = await testApp(t)
    for (const scheme of ['bearer', 'BEARER', 'BeArEr']) {
      const res = await a.app.inject({
        method: 'GET',
        url: '/v1/pets',
        headers: { authorization: `${scheme} ${a.key}` },
      })
      assert.equal(res.statusCode, 200, scheme)
    }
  })

  test('a revoked key is refused on its next request', async (t) => {
    const a = await testApp(t)
    assert.equal((await a.call({ method: 'GET', url: '/v1/pets' })).statusCode, 200)
    assert.equal(await a.store.revokeApiKey(a.keyId, a.clock.now()), true)
    const res = await a.call({ method: 'GET', url: '/v1/pets' })
    assert.equal(res.statusCode, 401)
    assert.deepEqual(json(res), unauthorized(INVALID))
  })

  test('an expired key is refused from its expiry instant on', async (t) => {
    const a = await testApp(t)
    const expiresAt = new Date(a.clock.now().getTime() + 60_000)
    const { key } = await createApiKey(a.store, a.clock, 'short-lived', expiresAt)
    const get = () =>
      a.app.inject({ method: 'GET', url: '/v1/pets', headers: { authorization: `Bearer ${key}` } })
    a.clock.set(new Date(expiresAt.getTime() - 1))
    assert.equal((await get()).statusCode, 200)
    a.clock.set(expiresAt)
    const res = await get()
    assert.equal(res.statusCode, 401)
    assert.deepEqual(json(res), unauthorized(INVALID))
  })

  test('keys from configuration are accepted besides stored ones', async (t) => {
    const a = await testApp(t, {
      config: { apiKeys: ['operator-key-0123456789', 'second-key-abcdefghij'] },
    })
    for (const key of ['operator-key-0123456789', 'second-key-abcdefghij', a.key]) {
      const res = await a.app.inject({
        method: 'GET',
        url: '/v1/pets',
        headers: { authorization: `Bearer ${key}` },
      })
      assert.equal(res.statusCode, 200, key)
    }
    const wrong = await a.app.inject({
      method: 'GET',
      url: '/v1/pets',
      headers: { authorization: 'Bearer operator-key-012345678' },
    })
    assert.equal(wrong.statusCode, 401)
  })

  test('public endpoints need no key', async (t) => {
    const a = await testApp(t)
    const health = await a.app.inject({ method: 'GET', url: '/healthz' })
    assert.equal(health.statusCode, 200)
    assert.deepEqual(json(health), { status: 'ok' })
    const ready = await a.app.inject({ method: 'GET', url: '/readyz' })
    assert.equal(ready.statusCode, 200)
    assert.deepEqual(json(ready), { status: 'ready' })
    const doc = await a.app.inject({ method: 'GET', url: '/v1/openapi.json' })
    assert.equal(doc.statusCode, 200)
    assert.equal(doc.headers['content-type'], 'application/json; charset=utf-8')
  })

  test('GET / says where the reference page and the OpenAPI document are', async (t) => {
    const a = await testApp(t)
    const link = '</docs>; rel="service-doc", </v1/openapi.json>; rel="service-desc"'
    const index = await a.app.inject({ method: 'GET', url: '/' })
    assert.equal(index.statusCode, 200)
    assert.equal(index.body, '{"docs":"/docs","openapi":"/v1/openapi.json"}')
    assert.equal(index.headers['content-type'], 'application/json; charset=utf-8')
    assert.equal(index.headers.link, link)
    const head = await a.app.inject({ method: 'HEAD', url: '/' })
    assert.equal(head.statusCode, 200)
    assert.equal(head.headers.link, link)
    const post = await a.app.inject({ method: 'POST', url: '/' })
    assert.equal(post.statusCode, 405)
    assert.equal(post.headers.allow, 'GET, HEAD')
    // Both places it names answer, without a key.
    for (const url of ['/docs', '/v1/openapi.json']) {
      assert.equal((await a.app.inject({ method: 'GET', url })).statusCode, 200, url)
    }
  })
})

describe('routing errors', () => {
  test('unknown path under /v1 with a key: 404 not_found', async (t) => {
    const a = await testApp(t)
    const res = await a.call({ method: 'GET', url: '/v1/dogs?x=1' })
    assert.equal(res.statusCode, 404)
    assert.deepEqual(json(res), {
      code: 'not_found',
      message: 'no resource at /v1/dogs',
      status: 404,
    })
  })

  test('unknown path outside /v1: 404 without needing a key', async (t) => {
    const a = await testApp(t)
    const res = await a.app.inject({ method: 'GET', url: '/elsewhere' })
    assert.equal(res.statusCode, 404)
    assert.deepEqual(json(res), {
      code: 'not_found',
      message: 'no resource at /elsewhere',
      status: 404,
    })
    assert.equal(res.headers['content-type'], 'application/json; charset=utf-8')
  })

  test('a known path with another method: 405 with Allow', async (t) => {
    const a = await testApp(t)
    const cases = [
      ['DELETE', '/v1/pets', 'GET, HEAD, POST'],
      ['PUT', '/v1/pets/1', 'GET, HEAD'],
      ['PATCH', '/v1/pets/1', 'GET, HEAD'],
      ['OPTIONS', '/v1/pets', 'GET, HEAD, POST'],
      ['POST', '/v1/store/orders', 'GET, HEAD'],
    ] as const
    for (const [method, url, allow] of cases) {
      const res = await a.call({ method, url })
      assert.equal(res.statusCode, 405, `${method} ${url}`)
      assert.equal(res.headers.allow, allow)
      assert.deepEqual(json(res), {
        code: 'method_not_allowed',
        message: `${method} is not allowed here; use ${allow}`,
        status: 405,
      })
    }
  })

  test('GET /v1/store/orders: 501 not_implemented', async (t) => {
    const a = await testApp(t)
    const res = await a.call({ method: 'GET', url: '/v1/store/orders' })
    assert.equal(res.statusCode, 501)
    assert.deepEqual(json(res), {
      code: 'not_implemented',
      message: 'store orders are not implemented by this service',
      status: 501,
    })
  })

  test('a malformed percent-encoding in the URL is 400 with an Error body', async (t) => {
    const a = await testApp(t)
    const res = await a.call({ method: 'GET', url: '/v1/pets/%E0%A4%A' })
    assert.equal(res.statusCode, 400)
    assert.deepEqual(json(res), {
      code: 'invalid_request',
      message: 'the request URL is malformed',
      status: 400,
    })
    assert.equal(res.headers['cache-control'], 'no-store')
    assert.match(String(res.headers['x-request-id']), /^[0-9a-f-]{36}$/)
  })
})

describe('request id and caching headers', () => {
  test('a sane incoming X-Request-Id is echoed; an unsafe one is replaced', async (t) => {
    const a = await testApp(t)
    const echoed = await a.call({
      method: 'GET',
      url: '/v1/pets',
      headers: { 'x-request-id': 'abc-123.x:y' },
    })
    assert.equal(echoed.headers['x-request-id'], 'abc-123.x:y')
    for (const bad of ['has space', 'x'.repeat(129), '<script>', '']) {
      const res = await a.call({ method: 'GET', url: '/v1/pets', headers: { 'x-request-id': bad } })
      assert.notEqual(res.headers['x-request-id'], bad)
      assert.match(String(res.headers['x-request-id']), /^[0-9a-f-]{36}$/)
    }
  })

  storeIndependent(() => {
    test('fresh ids are version 4 UUIDs, each distinct', () => {
      const ids = Array.from({ length: 1000 }, () => requestId({ headers: {} } as IncomingMessage))
      for (const id of ids) assert.match(id, V4_UUID)
      assert.equal(new Set(ids).size, ids.length)
      // Every other position takes more than 4 of the 16 digits: each id is written afresh.
      for (let i = 0; i < 36; i++) {
        // Not the dashes, the version (14) or the variant (19, one of 8, 9, a, b).
        if ([8, 13, 14, 18, 19, 23].includes(i)) continue
        assert.ok(new Set(ids.map((id) => id[i])).size > 4, `position ${i}`)
      }
    })
  })

  test('errors carry X-Request-Id and Cache-Control too', async (t) => {
    const a = await testApp(t)
    const res = await a.app.inject({
      method: 'GET',
      url: '/v1/pets',
      headers: { 'x-request-id': 'req-1' },
    })
    assert.equal(res.statusCode, 401)
    assert.equal(res.headers['x-request-id'], 'req-1')
    assert.equal(res.headers['cache-control'], 'no-store')
  })
})

describe('errors before routing, on a real socket', () => {
  test('oversized headers: 431 with an Error body', async (t) => {
    const a = await testApp(t)
    await a.app.listen({ port: 0, host: '127.0.0.1' })
    const port = (a.app.server.address() as { port: number }).port
    const text = await rawRequest(
      port,
      `GET /v1/pets HTTP/1.1\r\nHost: x\r\nX-Big: ${'a'.repeat(20_000)}\r\n\r\n`,
    )
    const res = parseRaw(text)
    assert.equal(res.status, 431)
    assert.equal(res.headers['content-type'], 'application/json; charset=utf-8')
    assert.deepEqual(JSON.parse(res.body), {
      code: 'invalid_request',
      message: 'request headers are too large',
      status: 431,
    })
  })

  test('a malformed request line: 400 with an Error body', async (t) => {
    const a = await testApp(t)
    await a.app.listen({ port: 0, host: '127.0.0.1' })
    const port = (a.app.server.address() as { port: number }).port
    const res = parseRaw(await rawRequest(port, 'NOT A REQUEST\r\n\r\n'))
    assert.equal(res.status, 400)
    assert.deepEqual(JSON.parse(res.body), {
      code: 'invalid_request',
      message: 'malformed HTTP request',
      status: 400,
    })
  })
})

describe('unexpected failures', () => {
  test('a storage failure is a 500 that leaks nothing', async (t) => {
    const a = await testApp(t, {
      wrapStore: (store) =>
        Object.assign(Object.create(store), {
          listPets: async () => {
            throw new Error(
              'SQLITE_CORRUPT: database disk image is malformed at /var/lib/secret.db',
            )
          },
        }),
    })
    const res = await a.call({ method: 'GET', url: '/v1/pets' })
    assert.equal(res.statusCode, 500)
    assert.equal(
      res.body,
      '{"code":"internal_error","message":"internal server error","status":500}',
    )
  })
})
