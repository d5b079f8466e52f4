// Rate limits: per API key with the draft-ietf-httpapi-ratelimit-headers fields, and failed
// authentication limited per client address.
import assert from 'node:assert/strict'
import { describe, test } from 'node:test'
import type { LightMyRequestResponse } from 'fastify'
import { createApiKey } from '../../src/auth/api-keys.js'
import { json, testApp } from '../support/app.js'
import { assertAnswered, errorBody, NO_KEY } from '../support/errors.js'

const LIMITS = { rateLimitMax: 3, rateLimitWindowMs: 60_000 }

/** The seconds `t` of a `RateLimit` field with the given policy and remaining quota. */
function assertRateLimit(res: LightMyRequestResponse, policy: string, remaining: number): number {
  const m = new RegExp(`^"${policy}";r=${remaining};t=(\\d+)$`).exec(String(res.headers.ratelimit))
  assert.ok(m, `RateLimit ${String(res.headers.ratelimit)} is "${policy}";r=${remaining};t=<n>`)
  const seconds = Number(m[1])
  assert.ok(seconds >= 1 && seconds <= 60, `t=${seconds} lies within the 60 s window`)
  return seconds
}

function assertRetryAfter(res: LightMyRequestResponse) {
  const value = String(res.headers['retry-after'])
  assert.match(value, /^[1-9][0-9]*$/)
  assert.ok(Number(value) <= 60, `Retry-After ${value} lies within the 60 s window`)
}

describe('per-key rate limit', () => {
  test('responses carry RateLimit-Policy and a decreasing RateLimit; the 4th is 429', async (t) => {
    const app = await testApp(t, { config: LIMITS })
    for (const remaining of [2, 1, 0]) {
      const res = await app.call({ method: 'GET', url: '/v1/pets' })
      assert.equal(res.statusCode, 200)
      assert.equal(res.headers['ratelimit-policy'], '"default";q=3;w=60')
      assertRateLimit(res, 'default', remaining)
    }
    const limited = await app.call({ method: 'GET', url: '/v1/pets' })
    assert.equal(limited.statusCode, 429)
    assert.equal(
      limited.body,
      '{"code":"rate_limited","message":"rate limit of this API key exceeded","status":429}',
    )
    assert.match(String(limited.headers['content-type']), /^application\/json/)
    assertRetryAfter(limited)
    assert.equal(limited.headers['ratelimit-policy'], '"default";q=3;w=60')
    assertRateLimit(limited, 'default', 0)
  })

  test('every operation draws on the same budget of the key', async (t) => {
    const app = await testApp(t, { config: LIMITS })
    const created = await app.call({
      method: 'POST',
      url: '/v1/pets',
      headers: { 'content-type': 'application/json' },
      payload: '{"name":"Rex","categoryId":7}',
    })
    assert.equal(created.statusCode, 201)
    assertRateLimit(created, 'default', 2)
    const got = await app.call({ method: 'GET', url: '/v1/pets/1' })
    assert.equal(got.statusCode, 200)
    assertRateLimit(got, 'default', 1)
    const invalid = await app.call({ method: 'GET', url: '/v1/pets?limit=0' })
    assert.equal(invalid.statusCode, 400)
    assertRateLimit(invalid, 'default', 0)
    const limited = await app.call({
      method: 'POST',
      url: '/v1/pets',
      headers: { 'content-type': 'application/json' },
      payload: '{"name":"Max","categoryId":7}',
    })
    assertAnswered(limited, errorBody(429, 'rate_limited', 'rate limit of this API key exceeded'))
    // The refused create created nothing.
    assert.equal((await app.store.listPets({ afterId: null, status: null, limit: 10 })).length, 1)
  })

  test('limits are per key: another key still passes', async (t) => {
    const app = await testApp(t, { config: LIMITS })
    for (let i = 0; i < 3; i++) {
      assert.equal((await app.call({ method: 'GET', url: '/v1/pets' })).statusCode, 200)
    }
    assert.equal((await app.call({ method: 'GET', url: '/v1/pets' })).statusCode, 429)

    const other = await createApiKey(app.store, app.clock, 'other-client')
    const res = await app.call({
      method: 'GET',
      url: '/v1/pets',
      headers: { authorization: `Bearer ${other.key}` },
    })
    assert.equal(res.statusCode, 200)
    assert.deepEqual(json(res), [])
    assert.equal(res.headers['ratelimit-policy'], '"default";q=3;w=60')
    assertRateLimit(res, 'default', 2)
  })

  test('the public OpenAPI document is neither authenticated nor limited', async (t) => {
    const app = await testApp(t, { config: { ...LIMITS, authFailureLimitMax: 1 } })
    for (let i = 0; i < 5; i++) {
      const res = await app.app.inject({ method: 'GET', url: '/v1/openapi.json' })
      assert.equal(res.statusCode, 200)
      assert.equal(res.headers.ratelimit, undefined)
    }
  })
})

describe('failed-authentication limit', () => {
  const config = { ...LIMITS, authFailureLimitMax: 2 }
  const badKey = {
    authorization: 'Bearer pet_000000000000_AAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA',
  }

  test('the third failed attempt from one address is 429 instead of 401', async (t) => {
    const app = await testApp(t, { config })
    const first = await app.app.inject({ method: 'GET', url: '/v1/pets', headers: badKey })
    assert.equal(first.statusCode, 401)
    assert.equal(
      first.headers['www-authenticate'],
      'Bearer realm="petstore", error="invalid_token"',
    )
    // No credentials at all is a failure too.
    const second = await app.app.inject({ method: 'GET', url: '/v1/pets' })
    assert.equal(second.statusCode, 401)
    assert.deepEqual(json(second), NO_KEY)

    const third = await app.app.inject({ method: 'POST', url: '/v1/pets', headers: badKey })
    assert.equal(third.statusCode, 429)
    assert.equal(
      third.body,
      '{"code":"rate_limited","message":"too many failed authentication attempts from this address","status":429}',
    )
    assertRetryAfter(third)
    assert.equal(third.headers['www-authenticate'], undefined)
  })

  test('failures are counted per client address', async (t) => {
    const app = await testApp(t, { config })
    for (let i = 0; i < 2; i++) {
      const res = await app.app.inject({ method: 'GET', url: '/v1/pets', headers: badKey })
      assert.equal(res.statusCode, 401)
    }
    const blocked = await app.app.inject({ method: 'GET', url: '/v1/pets', headers: badKey })
    assert.equal(blocked.statusCode, 429)

    const elsewhere = await app.app.inject({
      method: 'GET',
      url: '/v1/pets',
      headers: badKey,
      remoteAddress: '192.0.2.7',
    })
    assert.equal(elsewhere.statusCode, 401)
  })

  test("failed attempts do not consume a valid key's budget, and a valid key still passes", async (t) => {
    const app = await testApp(t, { config })
    for (let i = 0; i < 3; i++) {
      await app.app.inject({ method: 'GET', url: '/v1/pets', headers: badKey })
    }
    assert.equal(
      (await app.app.inject({ method: 'GET', url: '/v1/pets', headers: badKey })).statusCode,
      429,
    )

    // The same address, with a valid key: the whole per-key budget of 3 is still there.
    for (const remaining of [2, 1, 0]) {
      const res = await app.call({ method: 'GET', url: '/v1/pets' })
      assert.equal(res.statusCode, 200)
      assert.equal(res.headers['ratelimit-policy'], '"default";q=3;w=60')
      assertRateLimit(res, 'default', remaining)
    }
    assert.equal((await app.call({ method: 'GET', url: '/v1/pets' })).statusCode, 429)
  })
})
