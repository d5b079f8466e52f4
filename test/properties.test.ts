// Property-based tests: thousands of generated requests against every operation. Whatever the
// input, the service never answers 5xx, every error is the one Error body with a code from the
// contract's fixed set, and no invalid request ever creates a pet. fast-check prints the seed and
// the shrunk counterexample of any failure, so a failure can be replayed with { seed, path }.
import assert from 'node:assert/strict'
import { describe, test } from 'node:test'
import fc, { type Arbitrary, type JsonValue } from 'fast-check'
import type { InjectOptions, LightMyRequestResponse } from 'fastify'
import { isInteger, parse } from 'lossless-json'
import type { NewPet, Pet, PetStatus, Store } from '../src/storage/store.js'
import { type TestApp, testApp } from './support/app.js'

// The per-key budget and the failed-auth budget would otherwise stop a property after a few runs.
const LIMITS = { rateLimitMax: 1_000_000, authFailureLimitMax: 1_000_000 }
const SANE_REQUEST_ID = /^[A-Za-z0-9._:@-]{1,128}$/
const INT64_MIN = -(2n ** 63n)
const INT64_MAX = 2n ** 63n - 1n
/** A JSON integer literal: an optional minus and digits, no fraction or exponent. */
const INTEGER_LITERAL = /^-?(0|[1-9][0-9]*)$/
const LONE_SURROGATE = /\p{Cs}/u
const STATUSES: readonly string[] = ['available', 'pending', 'sold']
const JSON_TYPE = { 'content-type': 'application/json' }
/** fast-check options: the failing assertion's message goes into the report with the seed. */
const runs = (numRuns: number) => ({ numRuns, includeErrorInReport: true })
const SUNSET = 'Thu, 05 Dec 2030 00:00:00 GMT'
const CHALLENGE = 'Bearer realm="petstore"'
const INVALID_TOKEN_CHALLENGE = 'Bearer realm="petstore", error="invalid_token"'

/** The contract's fixed set of error codes and the HTTP status that goes with each. */
const ERROR_STATUS: Readonly<Record<string, number>> = {
  unauthorized: 401,
  invalid_request: 400,
  not_found: 404,
  method_not_allowed: 405,
  payload_too_large: 413,
  unsupported_media_type: 415,
  idempotency_key_reused: 422,
  idempotency_key_in_progress: 409,
  rate_limited: 429,
  gone: 410,
  not_implemented: 501,
  internal_error: 500,
  service_unavailable: 503,
}

/** Unicode White_Space, every code point of it. */
const WHITE_SPACE = [
  ...'\t\n\v\f\r \u0085\u00a0\u1680\u2000\u2001\u2002\u2003\u2004\u2005\u2006\u2007',
  ...'\u2008\u2009\u200a\u2028\u2029\u202f\u205f\u3000',
]
/** Invisible characters that are not White_Space: a name of only these is valid. */
const WHITE_SPACE_LOOKALIKES = ['\u180e', '\u200b', '\u2060', '\ufeff']

interface ErrorBody {
  code: string
  message: string
  status: number
}

// ---------------------------------------------------------------------------------------------
// Invariants and helpers

/** What every response satisfies whatever the request; returns the Error body of an error. */
function checkResponse(res: LightMyRequestResponse): ErrorBody | null {
  // The one 5xx the contract asks for: 501 on GET /v1/store/orders, checked by its code below.
  assert.ok(
    res.statusCode < 500 || res.statusCode === 501,
    `server error ${res.statusCode}: ${res.body}`,
  )
  const requestId = res.headers['x-request-id']
  assert.equal(typeof requestId, 'string', 'x-request-id is missing')
  assert.match(requestId as string, SANE_REQUEST_ID)
  if (res.statusCode < 400) return null
  assert.match(String(res.headers['content-type']), /^application\/json(;|$)/)
  const body = JSON.parse(res.body) as ErrorBody
  assert.equal(typeof body, 'object')
  assert.notEqual(body, null)
  assert.deepEqual(Object.keys(body).sort(), ['code', 'message', 'status'])
  assert.equal(body.status, res.statusCode)
  assert.equal(typeof body.message, 'string')
  assert.ok(body.message.length > 0, 'empty error message')
  assert.ok(Object.hasOwn(ERROR_STATUS, body.code), `code '${body.code}' is not in the enum`)
  assert.equal(ERROR_STATUS[body.code], res.statusCode, `code '${body.code}' has another status`)
  if (res.statusCode === 401) {
    assert.ok(
      [CHALLENGE, INVALID_TOKEN_CHALLENGE].includes(String(res.headers['www-authenticate'])),
      `bad challenge: ${res.headers['www-authenticate']}`,
    )
  }
  if (res.statusCode === 405) assert.equal(typeof res.headers.allow, 'string')
  if (res.statusCode === 501) assert.equal(body.code, 'not_implemented')
  return body
}

function expectError(res: LightMyRequestResponse, status: number, code: string): ErrorBody {
  assert.equal(res.statusCode, status, res.body)
  const body = checkResponse(res)
  assert.ok(body)
  assert.equal(body.code, code)
  return body
}

/** Parses a response body keeping every integer exact (as BigInt). */
function parseExact(text: string): unknown {
  return parse(text, null, (literal) => (isInteger(literal) ? BigInt(literal) : Number(literal)))
}

/** The Pet as the API returns it: no `status` field when the pet has none. */
function petJson(pet: Pet): Record<string, unknown> {
  const out: Record<string, unknown> = { id: pet.id, name: pet.name, categoryId: pet.categoryId }
  if (pet.status !== undefined) out.status = pet.status
  return out
}

/** The pets created since the previous look, read straight from the store. */
class NewPets {
  private lastId = 0n

  constructor(private readonly store: Store) {}

  async take(): Promise<Pet[]> {
    const pets = await this.store.listPets({ afterId: this.lastId, status: null, limit: 10 })
    const last = pets.at(-1)
    if (last) this.lastId = last.id
    return pets
  }
}

async function seedPets(store: Store, count: number): Promise<Pet[]> {
  const statuses: (PetStatus | undefined)[] = [undefined, 'available', 'pending', 'sold']
  const pets: Pet[] = []
  for (let i = 0; i < count; i++) {
    const pet: NewPet = { name: `seed ${i}`, categoryId: BigInt(i) * 1_000_000_007n }
    const status = statuses[i % statuses.length]
    if (status !== undefined) pet.status = status
    pets.push(await store.createPet(pet))
  }
  return pets
}

function hasLoneSurrogate(value: unknown): boolean {
  if (typeof value === 'string') return LONE_SURROGATE.test(value)
  if (Array.isArray(value)) return value.some(hasLoneSurrogate)
  if (value !== null && typeof value === 'object') {
    return Object.entries(value).some(([k, v]) => LONE_SURROGATE.test(k) || hasLoneSurrogate(v))
  }
  return false
}

function isValidName(s: string): boolean {
  const length = [...s].length
  return (
    length >= 1 &&
    length <= 255 &&
    /[^\p{White_Space}]/u.test(s) &&
    !s.includes('\u0000') &&
    !LONE_SURROGATE.test(s)
  )
}

function isInt64(n: bigint): boolean {
  return n >= INT64_MIN && n <= INT64_MAX
}

/** The canonical cursor of the page after `id`: base64url of `v1:<id>`. */
const cursorFor = (id: bigint): string => Buffer.from(`v1:${id}`).toString('base64url')

/** A cursor the service made: the canonical encoding of an id from 0 to the int64 maximum. */
function cursorId(cursor: string): bigint | null {
  const m = /^v1:(0|[1-9][0-9]*)$/.exec(Buffer.from(cursor, 'base64url').toString('utf8'))
  if (!m) return null
  const id = BigInt(m[1]!)
  return id <= INT64_MAX && cursorFor(id) === cursor ? id : null
}

// ---------------------------------------------------------------------------------------------
// Generators of JSON text whose meaning the oracle knows exactly

/** A JSON value as sent (raw text) with what a strict reader must make of it. */
interface Json {
  raw: string
  sem:
    | { kind: 'string'; s: string }
    | { kind: 'integer'; n: bigint }
    | { kind: 'other'; lone: boolean }
}

const jString = (s: string): Json => ({ raw: JSON.stringify(s), sem: { kind: 'string', s } })
const jInteger = (n: bigint, raw = n.toString()): Json => ({ raw, sem: { kind: 'integer', n } })
const jOther = (raw: string, lone = false): Json => ({ raw, sem: { kind: 'other', lone } })

function fromJsonValue(v: JsonValue): Json {
  const raw = JSON.stringify(v)
  if (typeof v === 'string') return jString(v)
  if (INTEGER_LITERAL.test(raw)) return jInteger(BigInt(raw))
  return jOther(raw, hasLoneSurrogate(v))
}

const codePoint = (min: number, max: number) =>
  fc.integer({ min, max }).map((c) => String.fromCodePoint(c))
const loneSurrogate = fc.integer({ min: 0xd800, max: 0xdfff }).map((c) => String.fromCharCode(c))
const astral = codePoint(0x10000, 0x10ffff)
/** One code point: ASCII, anything, astral-plane, white space or an invisible non-space. */
const nameUnit: Arbitrary<string> = fc.oneof(
  { weight: 6, arbitrary: fc.string({ unit: 'grapheme-ascii', minLength: 1, maxLength: 1 }) },
  { weight: 3, arbitrary: fc.string({ unit: 'binary', minLength: 1, maxLength: 1 }) },
  { weight: 3, arbitrary: astral },
  { weight: 2, arbitrary: fc.constantFrom(...WHITE_SPACE, ...WHITE_SPACE_LOOKALIKES) },
)
/** String content for nested garbage: any code point, now and then a lone surrogate. */
const jsonUnit: Arbitrary<string> = fc.oneof(
  { weight: 150, arbitrary: fc.string({ unit: 'binary', minLength: 1, maxLength: 1 }) },
  { weight: 1, arbitrary: loneSurrogate },
)

const nameString: Arbitrary<string> = fc.oneof(
  { weight: 5, arbitrary: fc.string({ unit: nameUnit, minLength: 1, maxLength: 30 }) },
  { weight: 2, arbitrary: fc.string({ unit: fc.constantFrom(...WHITE_SPACE), maxLength: 8 }) },
  {
    weight: 3,
    arbitrary: fc
      .integer({ min: 250, max: 260 })
      .chain((n) => fc.string({ unit: fc.oneof(astral, nameUnit), minLength: n, maxLength: n })),
  },
  {
    weight: 1,
    arbitrary: fc
      .tuple(
        fc.string({ unit: nameUnit, maxLength: 5 }),
        loneSurrogate,
        fc.string({ maxLength: 5 }),
      )
      .map(([a, b, c]) => a + b + c),
  },
)

const garbage: Arbitrary<Json> = fc
  .jsonValue({ maxDepth: 3, stringUnit: jsonUnit })
  .map(fromJsonValue)

const int64 = fc.oneof(
  { weight: 4, arbitrary: fc.bigInt({ min: INT64_MIN, max: INT64_MAX }) },
  {
    weight: 1,
    arbitrary: fc.constantFrom(
      INT64_MIN,
      INT64_MAX,
      0n,
      -1n,
      2n ** 53n + 1n,
      -(2n ** 53n) - 1n,
      9007199254740993n,
    ),
  },
)
const beyondInt64 = fc.oneof(
  fc.bigInt({ min: INT64_MAX + 1n, max: 2n ** 256n }),
  fc.bigInt({ min: -(2n ** 256n), max: INT64_MIN - 1n }),
  fc.constantFrom(INT64_MAX + 1n, INT64_MIN - 1n, 2n ** 64n, 10n ** 30n),
)
/** Numbers that are integers in value but not written as integer literals, and fractions. */
const nonIntegerNumber: Arbitrary<Json> = fc.oneof(
  fc
    .constantFrom('1.0', '1e2', '1E2', '-0.0', '0.5', '1e-2', '-1.5e+3', '0e0', '1e400', '-1e400')
    .map((raw) => jOther(raw)),
  fc.constantFrom('9223372036854775807.0', '9.223372036854775807e18').map((raw) => jOther(raw)),
  int64.map((n) => jOther(`${n}.0`)),
  int64.map((n) => jOther(`${n}e0`)),
  fc
    .double({ noNaN: true, noDefaultInfinity: true })
    .filter((x) => !Number.isInteger(x))
    .map((x) => jOther(JSON.stringify(x))),
)

const nameArb: Arbitrary<Json> = fc.oneof(
  { weight: 12, arbitrary: nameString.map(jString) },
  { weight: 1, arbitrary: garbage },
  { weight: 1, arbitrary: fc.constantFrom('true', 'null', '1', '[]', '{}').map((r) => jOther(r)) },
)
const categoryIdArb: Arbitrary<Json> = fc.oneof(
  { weight: 8, arbitrary: int64.map((n) => jInteger(n)) },
  { weight: 1, arbitrary: fc.constant(jInteger(0n, '-0')) },
  { weight: 2, arbitrary: beyondInt64.map((n) => jInteger(n)) },
  { weight: 2, arbitrary: nonIntegerNumber },
  { weight: 1, arbitrary: int64.map((n) => jString(String(n))) },
  { weight: 1, arbitrary: garbage },
)
const statusArb: Arbitrary<Json> = fc.oneof(
  { weight: 6, arbitrary: fc.constantFrom(...STATUSES).map(jString) },
  { weight: 1, arbitrary: fc.constant(jOther('null')) },
  {
    weight: 2,
    arbitrary: fc
      .constantFrom('Available', 'SOLD', '', ' sold', 'sold ', 'pending\u0000', 'availabl')
      .map(jString),
  },
  { weight: 1, arbitrary: fc.string({ unit: nameUnit, maxLength: 10 }).map(jString) },
  { weight: 1, arbitrary: garbage },
)
const idArb: Arbitrary<Json> = fc.oneof(
  int64.map((n) => jInteger(n)),
  beyondInt64.map((n) => jInteger(n)),
  fc.constant(jString('1')),
  garbage,
)
const extraKey: Arbitrary<string> = fc.oneof(
  fc.constantFrom(
    'Name',
    'NAME',
    'name ',
    'categoryID',
    'category_id',
    'status ',
    '__proto__',
    'constructor',
    'toString',
    'hasOwnProperty',
    '',
    'pet',
  ),
  fc.string({ unit: jsonUnit, maxLength: 10 }),
)

/** Sometimes present, sometimes not. */
const maybe = <T>(arb: Arbitrary<T>, present: number, absent: number) =>
  fc.oneof(
    { weight: present, arbitrary: arb },
    { weight: absent, arbitrary: fc.constant(undefined) },
  )

interface Field {
  key: string
  value: Json
}

interface ObjectBody {
  fields: Field[]
  text: string
}

function objectText(fields: Field[], ws: string): string {
  const members = fields.map((f) => `${JSON.stringify(f.key)}${ws}:${ws}${f.value.raw}`)
  return `{${ws}${members.join(`${ws},${ws}`)}${ws}}`
}

/** JSON objects near NewPet: each field right, wrong, missing, or joined by others. */
const objectBodyArb: Arbitrary<ObjectBody> = fc
  .record({
    name: maybe(nameArb, 12, 1),
    categoryId: maybe(categoryIdArb, 12, 1),
    status: maybe(statusArb, 1, 1),
    id: maybe(idArb, 1, 10),
    extras: fc.oneof(
      { weight: 8, arbitrary: fc.constant([] as [string, Json][]) },
      {
        weight: 2,
        arbitrary: fc.array(fc.tuple(extraKey, garbage), { minLength: 1, maxLength: 3 }),
      },
    ),
    ranks: fc.array(fc.nat(), { minLength: 7, maxLength: 7 }),
    ws: fc.constantFrom('', '', '', ' ', '\n', '\t', '\r\n  '),
  })
  .map(({ name, categoryId, status, id, extras, ranks, ws }) => {
    const entries: [string, Json | undefined][] = [
      ['name', name],
      ['categoryId', categoryId],
      ['status', status],
      ['id', id],
      ...extras,
    ]
    const fields: Field[] = []
    for (const [key, value] of entries) {
      // Keys stay unique: duplicate keys are a case of their own, tested by example.
      if (value !== undefined && !fields.some((f) => f.key === key)) fields.push({ key, value })
    }
    const ranked = fields.map((f, i) => ({ f, rank: ranks[i] ?? i }))
    ranked.sort((a, b) => a.rank - b.rank)
    const ordered = ranked.map((r) => r.f)
    return { fields: ordered, text: objectText(ordered, ws) }
  })

type Verdict =
  | { valid: true; pet: NewPet }
  | { valid: false; message: string; fields?: never }
  | { valid: false; fields: string[]; message?: never }

/** What the contract says of a JSON object body: the pet it makes, or what is wrong with it. */
function judge(fields: Field[]): Verdict {
  const lone = fields.some(
    (f) =>
      LONE_SURROGATE.test(f.key) ||
      (f.value.sem.kind === 'string' && LONE_SURROGATE.test(f.value.sem.s)) ||
      (f.value.sem.kind === 'other' && f.value.sem.lone),
  )
  if (lone) {
    return { valid: false, message: 'request body contains a lone UTF-16 surrogate escape' }
  }
  const bad = fields.map((f) => f.key).filter((k) => !['name', 'categoryId', 'status'].includes(k))
  const get = (key: string) => fields.find((f) => f.key === key)?.value.sem
  const name = get('name')
  const categoryId = get('categoryId')
  const status = get('status')
  const nameOk = name?.kind === 'string' && isValidName(name.s)
  const categoryOk = categoryId?.kind === 'integer' && isInt64(categoryId.n)
  const statusOk = status === undefined || (status.kind === 'string' && STATUSES.includes(status.s))
  if (!nameOk) bad.push('name')
  if (!categoryOk) bad.push('categoryId')
  if (!statusOk) bad.push('status')
  if (bad.length > 0 || name?.kind !== 'string' || categoryId?.kind !== 'integer') {
    return { valid: false, fields: bad }
  }
  const pet: NewPet = { name: name.s, categoryId: categoryId.n }
  if (status?.kind === 'string') pet.status = status.s as PetStatus
  return { valid: true, pet }
}

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

/** A valid NewPet and its compact JSON text. */
const validPetArb: Arbitrary<{ pet: NewPet; text: string }> = fc
  .record({
    name: fc.string({ unit: nameUnit, minLength: 1, maxLength: 20 }).filter(isValidName),
    categoryId: int64,
    status: maybe(fc.constantFrom(...STATUSES), 1, 1),
  })
  .map(({ name, categoryId, status }) => {
    const pet: NewPet = { name, categoryId }
    const fields: Field[] = [
      { key: 'name', value: jString(name) },
      { key: 'categoryId', value: jInteger(categoryId) },
    ]
    if (status !== undefined) {
      pet.status = status as PetStatus
      fields.push({ key: 'status', value: jString(status) })
    }
    return { pet, text: objectText(fields, '') }
  })

/** A header value as HTTP allows it: tab, visible ASCII, space and obs-text (0x80-0xFF). */
const headerChar: Arbitrary<string> = fc.oneof(
  { weight: 20, arbitrary: codePoint(0x20, 0x7e) },
  { weight: 1, arbitrary: fc.constant('\t') },
  { weight: 3, arbitrary: codePoint(0x80, 0xff) },
)

// ---------------------------------------------------------------------------------------------

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

// ---------------------------------------------------------------------------------------------
// Exact answers for inputs the properties found worth pinning down

describe('examples behind the properties', () => {
  const error = (message: string) => ({ code: 'invalid_request', message, status: 400 })

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
      assert.deepEqual(JSON.parse(res.body), error(message), payload)
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
    assert.deepEqual(JSON.parse(res.body), error('request body is not valid UTF-8'))

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
      assert.deepEqual(JSON.parse(res.body), error(message), qs)
    }
    const ok = await app.call({ method: 'GET', url: '/v1/pets?foo=bar&__proto__=1&LIMIT=0' })
    assert.equal(ok.statusCode, 200)
    assert.equal(ok.body, '[]')
  })

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
        error("path parameter 'petId' must be a 64-bit integer"),
        id,
      )
      assert.equal(res.headers.sunset, SUNSET)
    }
    const junk = await app.call({ method: 'GET', url: '/v1/pets/%E0%A4' })
    expectError(junk, 400, 'invalid_request')
  })

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
    assert.deepEqual(JSON.parse(missing.body), {
      code: 'unauthorized',
      message: 'an API key is required: send Authorization: Bearer <key>',
      status: 401,
    })
    const basic = await get(`Basic ${Buffer.from('a:b').toString('base64')}`)
    expectError(basic, 401, 'unauthorized')
    assert.equal(basic.headers['www-authenticate'], CHALLENGE)

    const otherLast = app.key.endsWith('A') ? 'B' : 'A'
    const wrong = await get(`Bearer ${app.key.slice(0, -1)}${otherLast}`)
    expectError(wrong, 401, 'unauthorized')
    assert.equal(wrong.headers['www-authenticate'], INVALID_TOKEN_CHALLENGE)
    assert.deepEqual(JSON.parse(wrong.body), {
      code: 'unauthorized',
      message: 'the API key is not valid (unknown, revoked or expired)',
      status: 401,
    })
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
