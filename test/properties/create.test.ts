// Property-based tests of createPet (POST /v1/pets): thousands of generated bodies, content
// types and Idempotency-Keys. Whatever the input, the service never answers 5xx, every error is
// the one Error body with a code from the contract's fixed set, and no invalid request ever
// creates a pet. fast-check prints the seed and the shrunk counterexample of any failure, so a
// failure can be replayed with { seed, path }.
import assert from 'node:assert/strict'
import { describe, test } from 'node:test'
import fc from 'fast-check'
import type { InjectOptions, LightMyRequestResponse } from 'fastify'
import type { NewPet } from '../../src/storage/store.js'
import { type TestApp, testApp } from '../support/app.js'
import { badRequest } from '../support/errors.js'
import {
  codePoint,
  type Field,
  headerChar,
  jInteger,
  jString,
  jsonUnit,
  judge,
  maybe,
  objectBodyArb,
  objectText,
  type Verdict,
  validPetArb,
} from './generators.js'
import {
  checkResponse,
  expectError,
  hasLoneSurrogate,
  JSON_TYPE,
  LIMITS,
  NewPets,
  parseExact,
  petJson,
  runs,
} from './invariants.js'

/**
 * Checks the answer to a POST against the verdict: a valid body is created once and reads back
 * field for field (int64 digits included); an invalid one is 400 naming what is wrong, and
 * creates nothing.
 */
async function checkCreate(
  app: TestApp,
  seen: NewPets,
  res: LightMyRequestResponse,
  verdict: Verdict,
): Promise<void> {
  checkResponse(res)
  const created = await seen.take()
  if (!verdict.valid) {
    const err = expectError(res, 400, 'invalid_request')
    if (verdict.message !== undefined) assert.equal(err.message, verdict.message)
    else {
      assert.ok(
        verdict.fields.some((f) => err.message.includes(`'${f}'`)),
        `message '${err.message}' names none of ${JSON.stringify(verdict.fields)}`,
      )
    }
    assert.deepEqual(created, [], 'an invalid request created a pet')
    return
  }
  assert.equal(res.statusCode, 201, res.body)
  assert.equal(created.length, 1)
  const stored = created[0]!
  const expected = { id: stored.id, ...verdict.pet }
  assert.deepEqual(stored, expected)
  assert.deepEqual(parseExact(res.body), petJson(stored))
  assert.ok(res.body.includes(`"id":${stored.id}`), res.body)
  assert.ok(res.body.includes(`"categoryId":${verdict.pet.categoryId}`), res.body)
  assert.equal(res.headers.location, `/v1/pets/${stored.id}`)
  const read = await app.call({ method: 'GET', url: `/v1/pets/${stored.id}` })
  assert.equal(read.statusCode, 200, read.body)
  assert.equal(read.body, res.body)
}

const postJson = (app: TestApp, payload: string | Buffer, headers: InjectOptions['headers'] = {}) =>
  app.call({ method: 'POST', url: '/v1/pets', headers: { ...JSON_TYPE, ...headers }, payload })

describe('properties: POST /v1/pets bodies', () => {
  test('a generated JSON object creates a pet exactly when it is a valid NewPet', async (t) => {
    const app = await testApp(t, { config: LIMITS })
    const seen = new NewPets(app.store)
    await fc.assert(
      fc.asyncProperty(objectBodyArb, async (body) => {
        const res = await postJson(app, body.text)
        await checkCreate(app, seen, res, judge(body.fields))
      }),
      runs(1000),
    )
  })

  test('bodies that are not a JSON object, not JSON or not UTF-8 are 400 and create nothing', async (t) => {
    const app = await testApp(t, { config: LIMITS })
    const seen = new NewPets(app.store)
    type Expect = string | RegExp | 'judge-by-parse'
    const nonObject = fc
      .jsonValue({ maxDepth: 3, stringUnit: jsonUnit })
      .filter((v) => v === null || typeof v !== 'object' || Array.isArray(v))
      .map((v): [Buffer, Expect] => [
        Buffer.from(JSON.stringify(v)),
        hasLoneSurrogate(v)
          ? 'request body contains a lone UTF-16 surrogate escape'
          : 'request body must be a JSON object',
      ])
    const invalidUtf8 = fc.constantFrom(
      [0xff],
      [0x80],
      [0xc0, 0x80],
      [0xc3],
      [0xe2, 0x82],
      [0xed, 0xa0, 0x80],
      [0xf4, 0x90, 0x80, 0x80],
      [0xf8, 0x88, 0x80, 0x80, 0x80],
      [0xfe, 0xfe],
    )
    const spliced = fc
      .tuple(validPetArb, invalidUtf8, fc.nat())
      .map(([{ text }, bad, at]): [Buffer, Expect] => {
        const bytes = Buffer.from(text)
        const i = at % (bytes.length + 1)
        const payload = Buffer.concat([bytes.subarray(0, i), Buffer.from(bad), bytes.subarray(i)])
        return [payload, 'request body is not valid UTF-8']
      })
    const truncated = fc.tuple(validPetArb, fc.nat()).map(([{ text }, at]): [Buffer, Expect] => {
      const cut = text.slice(0, at % text.length)
      return [
        Buffer.from(cut),
        cut === '' ? 'request body is empty' : /^request body is not valid JSON: /,
      ]
    })
    // Nests up to just under the 64 KiB limit: deep enough to exhaust a recursive parser.
    const nested = fc
      .oneof(
        fc.integer({ min: 1, max: 30_000 }).map((depth) => ['[', ']', depth, ''] as const),
        fc.integer({ min: 1, max: 10_000 }).map((depth) => ['{"a":', '}', depth, '1'] as const),
      )
      .map(([open, close, depth, core]): [Buffer, Expect] => {
        const text = `${open.repeat(depth)}${core}${close.repeat(depth)}`
        // An object nest lacks `name` (and has an unknown `a`) unless too deep to parse at all.
        return [Buffer.from(text), /^request body |^missing required field 'name'$/]
      })
    const randomBytes = fc
      .uint8Array({ maxLength: 120 })
      .map((b): [Buffer, Expect] => [Buffer.from(b), 'judge-by-parse'])
    const randomText = fc
      .string({ unit: 'binary', maxLength: 60 })
      .map((s): [Buffer, Expect] => [Buffer.from(s), 'judge-by-parse'])
    // A valid body with one of its keys repeated with another valid value.
    const duplicates = fc
      .tuple(validPetArb, fc.constantFrom('name', 'categoryId'))
      .map(([{ pet, text }, key]): [Buffer, Expect] => {
        const value =
          key === 'categoryId' ? String(pet.categoryId ^ 1n) : JSON.stringify(`${pet.name}x`)
        return [Buffer.from(`${text.slice(0, -1)},"${key}":${value}}`), /^request body /]
      })

    await fc.assert(
      fc.asyncProperty(
        fc.oneof(nonObject, spliced, truncated, nested, randomBytes, randomText, duplicates),
        async ([payload, expected]) => {
          const res = await postJson(app, payload)
          checkResponse(res)
          const created = await seen.take()
          if (expected !== 'judge-by-parse') {
            assert.deepEqual(created, [])
            const err = expectError(res, 400, 'invalid_request')
            if (typeof expected === 'string') assert.equal(err.message, expected)
            else assert.match(err.message, expected)
            return
          }
          let parsed: unknown
          try {
            const text = new TextDecoder('utf-8', { fatal: true }).decode(payload)
            parsed = JSON.parse(text)
          } catch {
            assert.deepEqual(created, [])
            assert.match(expectError(res, 400, 'invalid_request').message, /^request body /)
            return
          }
          if (parsed === null || typeof parsed !== 'object' || Array.isArray(parsed)) {
            assert.deepEqual(created, [])
            assert.match(expectError(res, 400, 'invalid_request').message, /^request body /)
            return
          }
          // A random object: whatever the answer, a pet exists exactly when it was 201.
          assert.ok([201, 400].includes(res.statusCode), res.body)
          assert.equal(created.length, res.statusCode === 201 ? 1 : 0)
        },
      ),
      runs(800),
    )
  })

  test('the content type decides between parsing and 415; only UTF-8 application/json is read', async (t) => {
    const app = await testApp(t, { config: LIMITS })
    const seen = new NewPets(app.store)
    const mediaTypes = [
      'application/json',
      'APPLICATION/JSON',
      'Application/Json',
      'text/plain',
      'text/json',
      'application/jsonp',
      'application/json-patch+json',
      'application/merge-patch+json',
      'application/x-www-form-urlencoded',
      'multipart/form-data',
      'application/octet-stream',
      'application/*',
      '*/*',
      'json',
    ]
    const charsets = [
      'utf-8',
      'UTF-8',
      '"utf-8"',
      'utf8',
      'latin1',
      'utf-16',
      'iso-8859-1',
      'ascii',
    ]
    const structured = fc
      .record({
        type: fc.oneof(
          fc.constantFrom('application/json', 'APPLICATION/JSON', 'Application/Json'),
          fc.constantFrom(...mediaTypes),
        ),
        charset: maybe(fc.constantFrom(...charsets), 1, 1),
        others: fc.subarray(['boundary=x', 'q=0.5', 'foo=bar']),
        sep: fc.constantFrom(';', '; ', ' ; '),
      })
      .map(({ type, charset, others, sep }) => {
        const params = [...others, ...(charset === undefined ? [] : [`charset=${charset}`])]
        const header = [type, ...params].join(sep)
        const utf8 =
          charset === undefined ||
          ['utf-8', 'utf8'].includes(charset.replace(/"/g, '').toLowerCase())
        return { header, accepted: type.toLowerCase() === 'application/json' && utf8 }
      })
    const garbageType = fc
      .string({ unit: headerChar, maxLength: 40 })
      .map((header) => ({ header, accepted: undefined }))

    await fc.assert(
      fc.asyncProperty(
        fc.oneof(structured, garbageType),
        validPetArb,
        async ({ header, accepted }, { pet, text }) => {
          const res = await postJson(app, text, { 'content-type': header })
          checkResponse(res)
          const created = await seen.take()
          const isJson = header.split(';')[0]!.trim().toLowerCase() === 'application/json'
          const expectCreated = accepted ?? (isJson ? res.statusCode === 201 : false)
          if (expectCreated) {
            assert.equal(res.statusCode, 201, res.body)
            assert.deepEqual(created, [{ id: created[0]?.id, ...pet }])
          } else {
            expectError(res, 415, 'unsupported_media_type')
            assert.deepEqual(created, [])
          }
        },
      ),
      runs(500),
    )
  })
})

describe('properties: Idempotency-Key on POST /v1/pets', () => {
  test('Idempotency-Key: invalid keys are 400; valid ones create once, replay, or 422', async (t) => {
    const app = await testApp(t, { config: LIMITS })
    const seen = new NewPets(app.store)
    // What the service must remember: the body and the pet of each key already used.
    const used = new Map<string, { pet: NewPet; id: bigint }>()
    const bodies: NewPet[] = [
      { name: 'Rex', categoryId: 1n },
      { name: 'Rex', categoryId: 1n, status: 'sold' },
      { name: 'Tom', categoryId: 9223372036854775807n, status: 'available' },
    ]
    const sameValue = (a: NewPet, b: NewPet) =>
      a.name === b.name && a.categoryId === b.categoryId && a.status === b.status
    const visible = codePoint(0x21, 0x7e)
    const idempotencyKey = fc.oneof(
      { weight: 4, arbitrary: fc.constantFrom('k1', 'k2', 'K1', 'key-3') },
      { weight: 3, arbitrary: fc.string({ unit: visible, minLength: 1, maxLength: 40 }) },
      {
        weight: 2,
        arbitrary: fc
          .integer({ min: 253, max: 258 })
          .chain((n) => fc.string({ unit: visible, minLength: n, maxLength: n })),
      },
      { weight: 3, arbitrary: fc.string({ unit: headerChar, maxLength: 40 }) },
      { weight: 1, arbitrary: fc.constantFrom('', ' ', 'a b', ' k1', 'k1 ', '\u00e9') },
    )
    // Key order and spacing vary: only the JSON value counts.
    const bodyText = (pet: NewPet, reversed: boolean, ws: string) => {
      const fields: Field[] = [
        { key: 'name', value: jString(pet.name) },
        { key: 'categoryId', value: jInteger(pet.categoryId) },
      ]
      if (pet.status !== undefined) fields.push({ key: 'status', value: jString(pet.status) })
      return objectText(reversed ? fields.reverse() : fields, ws)
    }

    await fc.assert(
      fc.asyncProperty(
        idempotencyKey,
        fc.nat({ max: bodies.length - 1 }),
        fc.boolean(),
        fc.constantFrom('', ' ', '\n'),
        async (ikey, which, reversed, ws) => {
          const pet = bodies[which]!
          const res = await postJson(app, bodyText(pet, reversed, ws), { 'idempotency-key': ikey })
          checkResponse(res)
          const created = await seen.take()
          if (!/^[\x21-\x7e]{1,255}$/.test(ikey)) {
            const err = expectError(res, 400, 'invalid_request')
            assert.ok(err.message.includes("'idempotency-key'"), err.message)
            assert.deepEqual(created, [])
            return
          }
          const before = used.get(ikey)
          if (before === undefined) {
            assert.equal(res.statusCode, 201, res.body)
            assert.equal(created.length, 1)
            assert.deepEqual(created[0], { id: created[0]!.id, ...pet })
            assert.equal(res.headers['idempotent-replayed'], undefined)
            used.set(ikey, { pet, id: created[0]!.id })
          } else if (sameValue(before.pet, pet)) {
            assert.equal(res.statusCode, 201, res.body)
            assert.deepEqual(created, [], 'a replay created a pet')
            assert.equal(res.headers['idempotent-replayed'], 'true')
            assert.deepEqual(parseExact(res.body), petJson({ id: before.id, ...pet }))
            assert.equal(res.headers.location, `/v1/pets/${before.id}`)
          } else {
            expectError(res, 422, 'idempotency_key_reused')
            assert.deepEqual(created, [])
          }
        },
      ),
      runs(600),
    )
  })
})

// Exact answers for inputs the properties found worth pinning down

describe('examples behind the properties', () => {
  test('each wrong field of a body is named in the 400, and nothing is created', async (t) => {
    const app = await testApp(t)
    const cases: [string, string][] = [
      ['{"name":"Rex","categoryId":1.0}', "field 'categoryId' must be a 64-bit integer"],
      ['{"name":"Rex","categoryId":1e2}', "field 'categoryId' must be a 64-bit integer"],
      ['{"name":"Rex","categoryId":-0.0}', "field 'categoryId' must be a 64-bit integer"],
      ['{"name":"Rex","categoryId":"7"}', "field 'categoryId' must be a 64-bit integer"],
      [
        '{"name":"Rex","categoryId":9223372036854775808}',
        "field 'categoryId' must be a 64-bit integer",
      ],
      [
        '{"name":"Rex","categoryId":-9223372036854775809}',
        "field 'categoryId' must be a 64-bit integer",
      ],
      ['{"name":true,"categoryId":1}', "field 'name' must be a string"],
      ['{"name":"","categoryId":1}', "field 'name' must be 1 to 255 characters long"],
      [
        '{"name":" \\t\\u3000\\u2028\\u0085","categoryId":1}',
        "field 'name' must contain a character that is not white space",
      ],
      [
        `{"name":"${'\u{1F600}'.repeat(256)}","categoryId":1}`,
        "field 'name' must be 1 to 255 characters long",
      ],
      ['{"name":"Rex","categoryId":1,"status":null}', "field 'status' must be a string"],
      [
        '{"name":"Rex","categoryId":1,"status":"SOLD"}',
        "field 'status' must be one of: available, pending, sold",
      ],
      ['{"categoryId":1}', "missing required field 'name'"],
      ['{"name":"Rex"}', "missing required field 'categoryId'"],
      [
        '{"name":"Rex","categoryId":1,"id":5}',
        "field 'id' must not be sent: the service assigns ids",
      ],
      ['{"name":"Rex","categoryId":1,"colour":"red"}', "unknown field 'colour'"],
      ['{"name":"Rex","categoryId":1,"__proto__":{"a":1}}', "unknown field '__proto__'"],
      ['{"name":"Rex","categoryId":1,"Name":"x"}', "unknown field 'Name'"],
      ['[{"name":"Rex","categoryId":1}]', 'request body must be a JSON object'],
      ['null', 'request body must be a JSON object'],
      ['{"name":"\\ud800","categoryId":1}', 'request body contains a lone UTF-16 surrogate escape'],
    ]
    for (const [payload, message] of cases) {
      const res = await postJson(app, payload)
      assert.equal(res.statusCode, 400, payload)
      checkResponse(res)
      assert.deepEqual(JSON.parse(res.body), badRequest(message), payload)
    }
    assert.deepEqual(await app.store.listPets({ afterId: null, status: null, limit: 10 }), [])
  })

  test('a body that is not UTF-8 or repeats a key is 400', async (t) => {
    const app = await testApp(t)
    const notUtf8 = Buffer.concat([
      Buffer.from('{"name":"R'),
      Buffer.from([0xc3, 0x28]),
      Buffer.from('x","categoryId":1}'),
    ])
    const res = await postJson(app, notUtf8)
    assert.equal(res.statusCode, 400)
    assert.deepEqual(JSON.parse(res.body), badRequest('request body is not valid UTF-8'))

    const dup = await postJson(app, '{"name":"a","name":"b","categoryId":1}')
    assert.equal(dup.statusCode, 400)
    assert.match(expectError(dup, 400, 'invalid_request').message, /^request body .*'name'/)
    assert.deepEqual(await app.store.listPets({ afterId: null, status: null, limit: 10 }), [])
  })

  test('255 astral-plane code points, int64 extremes and -0 are accepted and read back', async (t) => {
    const app = await testApp(t)
    const name = `${'\u{1F600}'.repeat(254)}\u{10FFFF}`
    const res = await postJson(
      app,
      `{"name":${JSON.stringify(name)},"categoryId":9223372036854775807,"status":"pending"}`,
    )
    assert.equal(res.statusCode, 201, res.body)
    assert.equal(
      res.body,
      `{"id":1,"name":${JSON.stringify(name)},"categoryId":9223372036854775807,"status":"pending"}`,
    )
    assert.equal(res.headers.location, '/v1/pets/1')

    const min = await postJson(app, '{"categoryId":-9223372036854775808,"name":"\\u200b"}')
    assert.equal(min.statusCode, 201, min.body)
    assert.equal(min.body, '{"id":2,"name":"\u200b","categoryId":-9223372036854775808}')

    const negZero = await postJson(app, '{"name":"Zero","categoryId":-0}')
    assert.equal(negZero.statusCode, 201, negZero.body)
    assert.equal(negZero.body, '{"id":3,"name":"Zero","categoryId":0}')

    const odd = await postJson(app, '{"name":"Odd","categoryId":9007199254740993}')
    assert.equal(odd.statusCode, 201, odd.body)
    const read = await app.call({ method: 'GET', url: '/v1/pets/4' })
    assert.equal(read.body, '{"id":4,"name":"Odd","categoryId":9007199254740993}')
  })

  test('an invalid Idempotency-Key is 400 naming the header, before anything is created', async (t) => {
    const app = await testApp(t)
    for (const key of ['', 'a b', '\u00e9', 'x'.repeat(256)]) {
      const res = await postJson(app, '{"name":"Rex","categoryId":1}', { 'idempotency-key': key })
      const err = expectError(res, 400, 'invalid_request')
      assert.match(err.message, /^header 'idempotency-key' /, JSON.stringify(key))
    }
    const ok = await postJson(app, '{"name":"Rex","categoryId":1}', {
      'idempotency-key': 'x'.repeat(255),
    })
    assert.equal(ok.statusCode, 201)
    assert.equal(ok.body, '{"id":1,"name":"Rex","categoryId":1}')
  })
})
