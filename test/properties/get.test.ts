// Property-based tests of getPet (GET /v1/pets/{petId}): thousands of generated path ids.
// Whatever the input, the service never answers 5xx and every error is the one Error body with a
// code from the contract's fixed set. fast-check prints the seed and the shrunk counterexample of
// any failure, so a failure can be replayed with { seed, path }.
import assert from 'node:assert/strict'
import { describe, test } from 'node:test'
import fc from 'fast-check'
import type { LightMyRequestResponse } from 'fastify'
import { testApp } from '../support/app.js'
import { badRequest } from '../support/errors.js'
import { beyondInt64, int64 } from './generators.js'
import {
  checkResponse,
  expectError,
  INTEGER_LITERAL,
  isInt64,
  LIMITS,
  parseExact,
  petJson,
  runs,
  SUNSET,
  seedPets,
} from './invariants.js'

describe('properties: path ids of GET /v1/pets/{petId}', () => {
  test('a decimal int64 is looked up (200 or 404); anything else is 400', async (t) => {
    const app = await testApp(t, { config: LIMITS })
    const pets = await seedPets(app.store, 3)
    const deprecationHeaders = (res: LightMyRequestResponse) => {
      assert.match(String(res.headers.deprecation), /^@[0-9]+$/)
      assert.equal(res.headers.sunset, SUNSET)
      assert.equal(res.headers.link, '</v1/pets>; rel="successor-version"')
    }
    // `.` and `..` (even as %2E) are dot-segments a URL parser removes: no client can send them.
    const isDotSegment = (s: string | null) => s === '.' || s === '..'
    const idText = fc.oneof(
      int64.map(String),
      fc.bigInt({ min: 1n, max: 3n }).map(String),
      beyondInt64.map(String),
      fc.constantFrom('+1', '01', '1.0', '1e2', ' 1', '1 ', '0x10', '-0', '00', '', '\u0663'),
      fc.constantFrom('\uff11', '1/2', '%', '?', '#', '1%00', 'null', '-', '...'),
      fc.string({ unit: 'binary', maxLength: 40 }),
      fc.string({ unit: 'grapheme', maxLength: 20 }),
    )
    const encoded = idText
      .filter((s) => !isDotSegment(s))
      .map((decoded) => ({ segment: encodeURIComponent(decoded), decoded, routed: true }))
    const junk = fc
      .string({ unit: fc.constantFrom(...'%0123456789aAbBcCdDeEfFzZ-'.split('')), maxLength: 16 })
      .map((segment) => {
        let decoded: string | null
        try {
          decoded = decodeURIComponent(segment)
        } catch {
          decoded = null
        }
        return { segment, decoded, routed: false }
      })
      .filter(({ decoded }) => !isDotSegment(decoded))

    await fc.assert(
      fc.asyncProperty(fc.oneof(encoded, junk), async ({ segment, decoded, routed }) => {
        const res = await app.call({ method: 'GET', url: `/v1/pets/${segment}` })
        checkResponse(res)
        if (routed) deprecationHeaders(res)
        if (decoded === null || !INTEGER_LITERAL.test(decoded) || !isInt64(BigInt(decoded))) {
          const err = expectError(res, 400, 'invalid_request')
          if (routed) assert.equal(err.message, "path parameter 'petId' must be a 64-bit integer")
          return
        }
        const id = BigInt(decoded)
        const pet = pets.find((p) => p.id === id)
        if (pet) {
          assert.equal(res.statusCode, 200, res.body)
          assert.deepEqual(parseExact(res.body), petJson(pet))
          deprecationHeaders(res)
        } else {
          assert.equal(expectError(res, 404, 'not_found').message, `no pet with id ${id}`)
        }
      }),
      runs(800),
    )
  })
})

// Exact answers for inputs the properties found worth pinning down

describe('examples behind the properties', () => {
  test('path ids: int64 bounds are looked up, anything beyond or malformed is 400', async (t) => {
    const app = await testApp(t)
    const notFound = await app.call({ method: 'GET', url: '/v1/pets/9223372036854775807' })
    assert.equal(notFound.statusCode, 404)
    assert.deepEqual(JSON.parse(notFound.body), {
      code: 'not_found',
      message: 'no pet with id 9223372036854775807',
      status: 404,
    })
    const lowest = await app.call({ method: 'GET', url: '/v1/pets/-9223372036854775808' })
    assert.equal(lowest.statusCode, 404)
    for (const id of ['9223372036854775808', '-9223372036854775809', '1e2', '%2B1', '01', '%20']) {
      const res = await app.call({ method: 'GET', url: `/v1/pets/${id}` })
      assert.equal(res.statusCode, 400, id)
      assert.deepEqual(
        JSON.parse(res.body),
        badRequest("path parameter 'petId' must be a 64-bit integer"),
        id,
      )
      assert.equal(res.headers.sunset, SUNSET)
    }
    const junk = await app.call({ method: 'GET', url: '/v1/pets/%E0%A4' })
    expectError(junk, 400, 'invalid_request')
  })
})
