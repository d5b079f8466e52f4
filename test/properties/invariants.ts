// What every answer satisfies whatever the request, and helpers the property tests share: the
// contract's error codes, exact int64 reading, the pets a test has made so far.
import assert from 'node:assert/strict'
import type { LightMyRequestResponse } from 'fastify'
import { isInteger, parse } from 'lossless-json'
import type { NewPet, Pet, PetStatus, Store } from '../../src/storage/store.js'
import type { ErrorBody } from '../support/errors.js'

// The per-key budget and the failed-auth budget would otherwise stop a property after a few runs.
export const LIMITS = { rateLimitMax: 1_000_000, authFailureLimitMax: 1_000_000 }
export const SANE_REQUEST_ID = /^[A-Za-z0-9._:@-]{1,128}$/
export const INT64_MIN = -(2n ** 63n)
export const INT64_MAX = 2n ** 63n - 1n
/** A JSON integer literal: an optional minus and digits, no fraction or exponent. */
export const INTEGER_LITERAL = /^-?(0|[1-9][0-9]*)$/
export const LONE_SURROGATE = /\p{Cs}/u
export const STATUSES: readonly string[] = ['available', 'pending', 'sold']
export const JSON_TYPE = { 'content-type': 'application/json' }
/** fast-check options: the failing assertion's message goes into the report with the seed. */
export const runs = (numRuns: number) => ({ numRuns, includeErrorInReport: true })
export const SUNSET = 'Thu, 05 Dec 2030 00:00:00 GMT'
export const CHALLENGE = 'Bearer realm="petstore"'
export const INVALID_TOKEN_CHALLENGE = 'Bearer realm="petstore", error="invalid_token"'

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
export const WHITE_SPACE = [
  ...'\t\n\v\f\r \u0085\u00a0\u1680\u2000\u2001\u2002\u2003\u2004\u2005\u2006\u2007',
  ...'\u2008\u2009\u200a\u2028\u2029\u202f\u205f\u3000',
]
/** Invisible characters that are not White_Space: a name of only these is valid. */
export const WHITE_SPACE_LOOKALIKES = ['\u180e', '\u200b', '\u2060', '\ufeff']

// ---------------------------------------------------------------------------------------------
// Invariants and helpers

/** What every response satisfies whatever the request; returns the Error body of an error. */
export function checkResponse(res: LightMyRequestResponse): ErrorBody | null {
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

export function expectError(res: LightMyRequestResponse, status: number, code: string): ErrorBody {
  assert.equal(res.statusCode, status, res.body)
  const body = checkResponse(res)
  assert.ok(body)
  assert.equal(body.code, code)
  return body
}

/** Parses a response body keeping every integer exact (as BigInt). */
export function parseExact(text: string): unknown {
  return parse(text, null, (literal) => (isInteger(literal) ? BigInt(literal) : Number(literal)))
}

/** The Pet as the API returns it: no `status` field when the pet has none. */
export function petJson(pet: Pet): Record<string, unknown> {
  const out: Record<string, unknown> = { id: pet.id, name: pet.name, categoryId: pet.categoryId }
  if (pet.status !== undefined) out.status = pet.status
  return out
}

/** The pets created since the previous look, read straight from the store. */
export class NewPets {
  private lastId = 0n

  constructor(private readonly store: Store) {}

  async take(): Promise<Pet[]> {
    const pets = await this.store.listPets({ afterId: this.lastId, status: null, limit: 10 })
    const last = pets.at(-1)
    if (last) this.lastId = last.id
    return pets
  }
}

export async function seedPets(store: Store, count: number): Promise<Pet[]> {
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

export function hasLoneSurrogate(value: unknown): boolean {
  if (typeof value === 'string') return LONE_SURROGATE.test(value)
  if (Array.isArray(value)) return value.some(hasLoneSurrogate)
  if (value !== null && typeof value === 'object') {
    return Object.entries(value).some(([k, v]) => LONE_SURROGATE.test(k) || hasLoneSurrogate(v))
  }
  return false
}

export function isValidName(s: string): boolean {
  const length = [...s].length
  return (
    length >= 1 &&
    length <= 255 &&
    /[^\p{White_Space}]/u.test(s) &&
    !s.includes('\u0000') &&
    !LONE_SURROGATE.test(s)
  )
}

export function isInt64(n: bigint): boolean {
  return n >= INT64_MIN && n <= INT64_MAX
}

/** The canonical cursor of the page after `id`: base64url of `v1:<id>`. */
export const cursorFor = (id: bigint): string => Buffer.from(`v1:${id}`).toString('base64url')

/** A cursor the service made: the canonical encoding of an id from 0 to the int64 maximum. */
export function cursorId(cursor: string): bigint | null {
  const m = /^v1:(0|[1-9][0-9]*)$/.exec(Buffer.from(cursor, 'base64url').toString('utf8'))
  if (!m) return null
  const id = BigInt(m[1]!)
  return id <= INT64_MAX && cursorFor(id) === cursor ? id : null
}
