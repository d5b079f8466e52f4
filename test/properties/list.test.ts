// Property-based tests of listPets (GET /v1/pets): thousands of generated query strings. Whatever
// the input, the service never answers 5xx and every error is the one Error body with a code from
// the contract's fixed set. fast-check prints the seed and the shrunk counterexample of any
// failure, so a failure can be replayed with { seed, path }.
import assert from 'node:assert/strict'
import { describe, test } from 'node:test'
import fc from 'fast-check'
import type { PetStatus } from '../../src/storage/store.js'
import { testApp } from '../support/app.js'
import { badRequest } from '../support/errors.js'
import {
  checkResponse,
  cursorFor,
  cursorId,
  expectError,
  INT64_MAX,
  INTEGER_LITERAL,
  LIMITS,
  parseExact,
  petJson,
  runs,
  STATUSES,
  seedPets,
} from './invariants.js'

describe('properties: query strings of GET /v1/pets', () => {
  test('limit, status and cursor are exact, repeats are 400, unknown parameters are ignored', async (t) => {
    const app = await testApp(t, { config: LIMITS })
    await seedPets(app.store, 45)
    const anyText = fc.string({ unit: 'binary', maxLength: 12 })
    const limitValue = fc.oneof(
      fc.integer({ min: 1, max: 100 }).map(String),
      fc.constantFrom('0', '101', '-1', '1.5', '1e1', '+5', ' 5', '5 ', '05', '', 'abc', '0x10'),
      fc.constantFrom('\u0663', '\uff15', '9'.repeat(30), '-0', '20\u0000'),
      anyText,
    )
    const statusValue = fc.oneof(
      fc.constantFrom(...STATUSES),
      fc.constantFrom('Available', 'SOLD', '', ' sold', 'sold,pending', 'null'),
      anyText,
    )
    const cursorValue = fc.oneof(
      fc.bigInt({ min: 0n, max: 50n }).map(cursorFor),
      fc.bigInt({ min: 0n, max: INT64_MAX }).map(cursorFor),
      fc.bigInt({ min: 0n, max: 50n }).map((n) => `${cursorFor(n)}=`),
      fc.bigInt({ min: 0n, max: 50n }).map((n) => Buffer.from(`v1:${n}`).toString('base64')),
      fc
        .constantFrom('v1:01', 'v1:-1', 'v2:5', `v1:${INT64_MAX + 1n}`, 'v1:', '', 'djE6')
        .map((s) => (s.startsWith('v') ? Buffer.from(s).toString('base64url') : s)),
      anyText,
    )
    const unknownKey = fc.oneof(
      fc.constantFrom('LIMIT', 'Status', 'page', 'offset', 'limit[]', '__proto__', 'constructor'),
      fc.string({ unit: 'binary', minLength: 1, maxLength: 8 }),
    )
    const param = fc.oneof(
      fc.tuple(fc.constant('limit'), limitValue),
      fc.tuple(fc.constant('status'), statusValue),
      fc.tuple(fc.constant('cursor'), cursorValue),
      fc.tuple(unknownKey, anyText),
    )

    await fc.assert(
      fc.asyncProperty(fc.array(param, { maxLength: 5 }), async (params) => {
        const qs = params
          .map(([k, v]) => `${encodeURIComponent(k)}=${encodeURIComponent(v)}`)
          .join('&')
        const res = await app.call({ method: 'GET', url: `/v1/pets${qs ? `?${qs}` : ''}` })
        checkResponse(res)

        const values = (key: string) => params.filter(([k]) => k === key).map(([, v]) => v)
        const [limits, statuses, cursors] = [values('limit'), values('status'), values('cursor')]
        const bad: string[] = []
        let limit = 20
        if (limits.length > 0) {
          const v = limits[0]!
          if (
            limits.length === 1 &&
            INTEGER_LITERAL.test(v) &&
            BigInt(v) >= 1n &&
            BigInt(v) <= 100n
          ) {
            limit = Number(v)
          } else bad.push('limit')
        }
        if (statuses.length > 1 || (statuses.length === 1 && !STATUSES.includes(statuses[0]!))) {
          bad.push('status')
        }
        const afterId = cursors.length === 1 ? cursorId(cursors[0]!) : null
        if (cursors.length > 1 || (cursors.length === 1 && afterId === null)) bad.push('cursor')

        if (bad.length > 0) {
          const err = expectError(res, 400, 'invalid_request')
          assert.ok(
            bad.some((p) => err.message.includes(p === 'cursor' ? 'cursor' : `'${p}'`)),
            `message '${err.message}' names none of ${bad.join(', ')}`,
          )
          return
        }
        assert.equal(res.statusCode, 200, res.body)
        const status = (statuses[0] ?? null) as PetStatus | null
        const rows = await app.store.listPets({ afterId, status, limit: limit + 1 })
        const page = rows.slice(0, limit)
        assert.deepEqual(parseExact(res.body), page.map(petJson))
        if (rows.length <= limit) {
          assert.equal(res.headers.link, undefined)
          return
        }
        const m = /^<([^>]+)>; rel="next"$/.exec(String(res.headers.link))
        assert.ok(m, `no next link: ${res.headers.link}`)
        const next = new URL(m[1]!)
        assert.equal(next.origin + next.pathname, 'http://localhost/v1/pets')
        assert.equal(next.searchParams.get('cursor'), cursorFor(page.at(-1)!.id))
        assert.equal(next.searchParams.get('limit'), String(limit))
        assert.equal(next.searchParams.get('status'), status)
      }),
      runs(800),
    )
  })

  test('raw, partly percent-encoded junk in the query string never breaks the service', async (t) => {
    const app = await testApp(t, { config: LIMITS })
    await seedPets(app.store, 5)
    const junkText = fc.string({
      unit: fc.constantFrom(...'%&=+;.,_~-!$()*:@/?0123456789aAfFzZlimtsuc'.split('')),
      maxLength: 12,
    })
    const key = fc.oneof(
      fc.constantFrom('limit', 'status', 'cursor', 'li%6Dit', '%73tatus', 'LIMIT', 'limit%00'),
      fc.constantFrom('limit+', 'cursor[]', ''),
      junkText,
    )
    const value = fc.oneof(
      fc.constantFrom('10', 'sold', 'avail%61ble', '1%30', '+1', '%2B1', '%', '%zz', '1+', ''),
      fc.constantFrom('djE6Mw', 'djE6Mw%3D%3D', 'djE6M+', '%E0%A4'),
      junkText,
    )
    const query = fc
      .array(
        fc.tuple(key, fc.constantFrom('=', '', '=='), value, fc.constantFrom('&', '&&', ';')),
        {
          maxLength: 5,
        },
      )
      .map((parts) => parts.map((p) => p.join('')).join(''))
    await fc.assert(
      fc.asyncProperty(query, async (qs) => {
        const res = await app.call({ method: 'GET', url: `/v1/pets?${qs}` })
        checkResponse(res)
        if (res.statusCode === 200) {
          const pets = parseExact(res.body) as Record<string, unknown>[]
          assert.ok(Array.isArray(pets) && pets.length <= 100)
          const ids = pets.map((p) => p.id as bigint)
          assert.deepEqual(
            ids,
            [...new Set(ids)].sort((a, b) => (a < b ? -1 : 1)),
          )
          return
        }
        const err = expectError(res, 400, 'invalid_request')
        assert.match(err.message, /'limit'|'status'|cursor/)
      }),
      runs(600),
    )
  })
})

// Exact answers for inputs the properties found worth pinning down

describe('examples behind the properties', () => {
  test('query parameters: the 400 names the parameter; unknown ones are ignored', async (t) => {
    const app = await testApp(t)
    const cases: [string, string][] = [
      ['limit=0', "query parameter 'limit' must be an integer from 1 to 100"],
      ['limit=101', "query parameter 'limit' must be an integer from 1 to 100"],
      ['limit=1.5', "query parameter 'limit' must be an integer from 1 to 100"],
      ['limit=', "query parameter 'limit' must be an integer from 1 to 100"],
      ['limit=5&limit=5', "query parameter 'limit' must be an integer from 1 to 100"],
      ['status=SOLD', "query parameter 'status' must be one of: available, pending, sold"],
      ['status=sold&status=sold', "query parameter 'status' must be a string"],
      ['cursor=abc', "query parameter 'cursor' is malformed: use the Link of the previous page"],
      [
        `cursor=${cursorFor(1n)}%3D`,
        "query parameter 'cursor' is malformed: use the Link of the previous page",
      ],
      ['cursor=a&cursor=b', "query parameter 'cursor' must be a string"],
    ]
    for (const [qs, message] of cases) {
      const res = await app.call({ method: 'GET', url: `/v1/pets?${qs}` })
      assert.equal(res.statusCode, 400, qs)
      checkResponse(res)
      assert.deepEqual(JSON.parse(res.body), badRequest(message), qs)
    }
    const ok = await app.call({ method: 'GET', url: '/v1/pets?foo=bar&__proto__=1&LIMIT=0' })
    assert.equal(ok.statusCode, 200)
    assert.equal(ok.body, '[]')
  })
})
