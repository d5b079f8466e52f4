// Property-based tests of any request: generated methods, paths, Authorization and X-Request-Id.
// Whatever the input, the service never answers 5xx and every error is the one Error body with a
// code from the contract's fixed set. fast-check prints the seed and the shrunk counterexample of
// any failure, so a failure can be replayed with { seed, path }.
import assert from 'node:assert/strict'
import { describe, test } from 'node:test'
import fc from 'fast-check'
import type { InjectOptions } from 'fastify'
import { testApp } from '../support/app.js'
import { INVALID_TOKEN, NO_KEY } from '../support/errors.js'
import { codePoint, headerChar, maybe } from './generators.js'
import {
  CHALLENGE,
  checkResponse,
  expectError,
  INVALID_TOKEN_CHALLENGE,
  JSON_TYPE,
  LIMITS,
  NewPets,
  runs,
  SANE_REQUEST_ID,
} from './invariants.js'

describe('properties: methods and paths', () => {
  test('any method on any path: Error bodies throughout, and 401 first under /v1', async (t) => {
    const app = await testApp(t, { config: LIMITS })
    const seen = new NewPets(app.store)
    const method = fc.constantFrom(
      ...['GET', 'POST', 'PUT', 'PATCH', 'DELETE', 'OPTIONS', 'TRACE', 'PROPFIND', 'QUERY'],
    )
    const segment = fc.oneof(
      { weight: 4, arbitrary: fc.constantFrom('v1', 'pets', 'store', 'orders', '1', '') },
      { weight: 1, arbitrary: fc.constantFrom('healthz', 'readyz', 'openapi.json', 'V1', 'docs') },
      {
        weight: 1,
        arbitrary: fc
          .string({ unit: 'binary', minLength: 1, maxLength: 8 })
          .filter((s) => s !== '.' && s !== '..')
          .map(encodeURIComponent),
      },
    )
    const path = fc
      .tuple(fc.constantFrom('/v1/', '/v1/', '/'), fc.array(segment, { maxLength: 3 }))
      .map(([prefix, segments]) => `${prefix}${segments.join('/')}`)
    const body = maybe(fc.constantFrom('{"name":"Rex","categoryId":5}', '{"id":1}', '{'), 1, 1)

    await fc.assert(
      fc.asyncProperty(method, path, body, fc.boolean(), async (m, url, payload, authed) => {
        const headers: Record<string, string> = {}
        if (authed) headers.authorization = `Bearer ${app.key}`
        if (payload !== undefined) headers['content-type'] = 'application/json'
        const res = await app.app.inject({
          method: m as InjectOptions['method'],
          url,
          headers,
          ...(payload === undefined ? {} : { payload }),
        })
        checkResponse(res)
        const created = await seen.take()
        const pathname = url.split('?')[0]!
        // An API path in any spelling a router could read as one: case, empty segments, escapes.
        const firstSegment = decodeURIComponent(pathname)
          .split(/[/\\]/)
          .find((segment) => segment !== '')
        const underV1 = (firstSegment ?? '').split(';')[0]!.toLowerCase() === 'v1'
        const publicRoute = m === 'GET' && pathname === '/v1/openapi.json'
        if (!authed && underV1 && !publicRoute) expectError(res, 401, 'unauthorized')
        else assert.notEqual(res.statusCode, 401, res.body)
        assert.ok([200, 201, 400, 401, 404, 405, 415, 501].includes(res.statusCode), res.body)
        const creates = res.statusCode === 201 && m === 'POST' && pathname === '/v1/pets'
        assert.equal(created.length, creates ? 1 : 0, `${m} ${url} -> ${res.statusCode}`)
      }),
      runs(800),
    )
  })
})

describe('properties: headers', () => {
  test('Authorization: only "Bearer <valid key>" (any case of the scheme) gets past 401', async (t) => {
    const app = await testApp(t, { config: LIMITS })
    const seen = new NewPets(app.store)
    const key = app.key
    const mutate = (i: number, c: string) => {
      const at = i % key.length
      return key.slice(0, at) + c + key.slice(at + 1)
    }
    const token = fc.oneof(
      { weight: 6, arbitrary: fc.constant(key) },
      {
        weight: 1,
        arbitrary: fc.tuple(fc.nat(), codePoint(0x21, 0x7e)).map(([i, c]) => mutate(i, c)),
      },
      { weight: 1, arbitrary: fc.nat({ max: key.length - 1 }).map((n) => key.slice(0, n)) },
      { weight: 1, arbitrary: fc.constantFrom(`${key}x`, key.toUpperCase(), `${key},${key}`) },
      {
        weight: 2,
        arbitrary: fc.string({ unit: codePoint(0x21, 0x7e), minLength: 1, maxLength: 60 }),
      },
      { weight: 1, arbitrary: fc.string({ unit: headerChar, maxLength: 60 }) },
      {
        weight: 1,
        arbitrary: fc.stringMatching(/^pet_[0-9a-f]{12}_[A-Za-z0-9_-]{43}$/),
      },
    )
    const scheme = fc.oneof(
      { weight: 5, arbitrary: fc.mixedCase(fc.constant('bearer')) },
      {
        weight: 1,
        arbitrary: fc.constantFrom('Basic', 'Token', 'Bearer:', 'Bearer_', 'Digest', ''),
      },
      { weight: 1, arbitrary: fc.string({ unit: headerChar, maxLength: 10 }) },
    )
    const authorization = fc.oneof(
      { weight: 1, arbitrary: fc.constant(undefined) },
      {
        weight: 12,
        arbitrary: fc.record({
          lead: fc.constantFrom('', '', ' '),
          scheme,
          sep: fc.constantFrom(' ', ' ', ' ', '  ', '\t', ''),
          token,
          trail: fc.constantFrom('', '', ' ', '  '),
        }),
      },
    )
    const targets: { opts: InjectOptions; status: number }[] = [
      { opts: { method: 'GET', url: '/v1/pets?limit=1' }, status: 200 },
      { opts: { method: 'GET', url: '/v1/pets?limit=0' }, status: 400 },
      {
        opts: {
          method: 'POST',
          url: '/v1/pets',
          headers: JSON_TYPE,
          payload: '{"name":"x","categoryId":1}',
        },
        status: 201,
      },
      {
        opts: {
          method: 'POST',
          url: '/v1/pets',
          headers: JSON_TYPE,
          payload: '{"name":"x","id":1}',
        },
        status: 400,
      },
      { opts: { method: 'GET', url: '/v1/pets/9223372036854775807' }, status: 404 },
      { opts: { method: 'GET', url: '/v1/store/orders' }, status: 501 },
      { opts: { method: 'DELETE', url: '/v1/pets' }, status: 405 },
      { opts: { method: 'GET', url: '/v1/no-such-thing' }, status: 404 },
    ]

    await fc.assert(
      fc.asyncProperty(authorization, fc.nat({ max: targets.length - 1 }), async (auth, which) => {
        const target = targets[which]!
        const header =
          auth === undefined
            ? undefined
            : `${auth.lead}${auth.scheme}${auth.sep}${auth.token}${auth.trail}`
        const headers: Record<string, string> = {}
        for (const [k, v] of Object.entries(target.opts.headers ?? {})) headers[k] = String(v)
        if (header !== undefined) headers.authorization = header
        const res = await app.app.inject({ ...target.opts, headers })
        checkResponse(res)
        const created = await seen.take()
        const valid =
          auth !== undefined &&
          auth.scheme.toLowerCase() === 'bearer' &&
          /^ +$/.test(auth.sep) &&
          auth.token === key
        if (!valid) {
          expectError(res, 401, 'unauthorized')
          assert.deepEqual(created, [], 'an unauthenticated request created a pet')
          if (auth === undefined) assert.equal(res.headers['www-authenticate'], CHALLENGE)
          else if (
            auth.scheme.toLowerCase() === 'bearer' &&
            auth.sep === ' ' &&
            /^[\x21-\x7e]+$/.test(auth.token)
          ) {
            assert.equal(res.headers['www-authenticate'], INVALID_TOKEN_CHALLENGE)
          }
          return
        }
        assert.equal(res.statusCode, target.status, res.body)
        assert.equal(res.headers['www-authenticate'], undefined)
        assert.equal(created.length, target.status === 201 ? 1 : 0)
      }),
      runs(1000),
    )
  })

  test('X-Request-Id is echoed only when sane; otherwise the service makes a sane one', async (t) => {
    const app = await testApp(t, { config: LIMITS })
    const saneChar = fc.constantFrom(...'ABCXYZabcxyz0189._:@-'.split(''))
    const requestId = fc.oneof(
      fc.stringMatching(/^[A-Za-z0-9._:@-]{1,128}$/),
      fc
        .integer({ min: 126, max: 130 })
        .chain((n) => fc.string({ unit: saneChar, minLength: n, maxLength: n })),
      fc.string({ unit: headerChar, maxLength: 140 }),
      fc
        .tuple(
          fc.string({ unit: saneChar, maxLength: 20 }),
          headerChar,
          fc.string({ unit: saneChar, maxLength: 20 }),
        )
        .map(([a, b, c]) => a + b + c),
      fc.tuple(fc.stringMatching(/^[a-z0-9]{1,10}$/), fc.stringMatching(/^[a-z0-9]{1,10}$/)),
    )
    const targets: InjectOptions[] = [
      { method: 'GET', url: '/v1/pets?limit=1' },
      { method: 'GET', url: '/v1/pets?limit=abc' },
      {
        method: 'POST',
        url: '/v1/pets',
        headers: JSON_TYPE,
        payload: '{"name":"x","categoryId":7}',
      },
      { method: 'POST', url: '/v1/pets', headers: JSON_TYPE, payload: '{' },
      { method: 'POST', url: '/v1/pets', headers: { 'content-type': 'text/plain' }, payload: 'x' },
      { method: 'GET', url: '/v1/pets/1' },
      { method: 'GET', url: '/v1/nothing' },
      { method: 'GET', url: '/healthz' },
    ]

    await fc.assert(
      fc.asyncProperty(
        requestId,
        fc.nat({ max: targets.length - 1 }),
        fc.boolean(),
        async (id, which, authenticated) => {
          const target = targets[which]!
          const headers: Record<string, string | string[]> = { 'x-request-id': id }
          for (const [k, v] of Object.entries(target.headers ?? {})) {
            headers[k] = String(v)
          }
          if (authenticated) headers.authorization = `Bearer ${app.key}`
          const res = await app.app.inject({ ...target, headers })
          checkResponse(res)
          const sent = Array.isArray(id) ? id.join(', ') : id
          if (typeof id === 'string' && SANE_REQUEST_ID.test(id)) {
            assert.equal(res.headers['x-request-id'], id)
          } else {
            assert.notEqual(res.headers['x-request-id'], sent)
          }
        },
      ),
      runs(600),
    )
  })
})

// Exact answers for inputs the properties found worth pinning down

describe('examples behind the properties', () => {
  test('Authorization: a lower-case scheme with the valid key succeeds; others are 401', async (t) => {
    const app = await testApp(t, { config: LIMITS })
    const get = (authorization?: string) =>
      app.app.inject({
        method: 'GET',
        url: '/v1/pets',
        headers: authorization === undefined ? {} : { authorization },
      })
    assert.equal((await get(`bearer ${app.key}`)).statusCode, 200)
    assert.equal((await get(`BEARER ${app.key}`)).statusCode, 200)

    const missing = await get()
    expectError(missing, 401, 'unauthorized')
    assert.equal(missing.headers['www-authenticate'], CHALLENGE)
    assert.deepEqual(JSON.parse(missing.body), NO_KEY)
    const basic = await get(`Basic ${Buffer.from('a:b').toString('base64')}`)
    expectError(basic, 401, 'unauthorized')
    assert.equal(basic.headers['www-authenticate'], CHALLENGE)

    const otherLast = app.key.endsWith('A') ? 'B' : 'A'
    const wrong = await get(`Bearer ${app.key.slice(0, -1)}${otherLast}`)
    expectError(wrong, 401, 'unauthorized')
    assert.equal(wrong.headers['www-authenticate'], INVALID_TOKEN_CHALLENGE)
    assert.deepEqual(JSON.parse(wrong.body), INVALID_TOKEN)
  })
})
