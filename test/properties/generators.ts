// Generators of request parts whose meaning the oracle knows exactly: JSON text (with the value
// it stands for), names, int64 values and beyond, and the verdict the contract gives a body.
import fc, { type Arbitrary, type JsonValue } from 'fast-check'
import type { NewPet, PetStatus } from '../../src/storage/store.js'
import {
  hasLoneSurrogate,
  INT64_MAX,
  INT64_MIN,
  INTEGER_LITERAL,
  isInt64,
  isValidName,
  LONE_SURROGATE,
  STATUSES,
  WHITE_SPACE,
  WHITE_SPACE_LOOKALIKES,
} from './invariants.js'

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

export const jString = (s: string): Json => ({ raw: JSON.stringify(s), sem: { kind: 'string', s } })
export const jInteger = (n: bigint, raw = n.toString()): Json => ({
  raw,
  sem: { kind: 'integer', n },
})
const jOther = (raw: string, lone = false): Json => ({ raw, sem: { kind: 'other', lone } })

function fromJsonValue(v: JsonValue): Json {
  const raw = JSON.stringify(v)
  if (typeof v === 'string') return jString(v)
  if (INTEGER_LITERAL.test(raw)) return jInteger(BigInt(raw))
  return jOther(raw, hasLoneSurrogate(v))
}

export const codePoint = (min: number, max: number) =>
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
export const jsonUnit: Arbitrary<string> = fc.oneof(
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

export const int64 = fc.oneof(
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
export const beyondInt64 = fc.oneof(
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
export const maybe = <T>(arb: Arbitrary<T>, present: number, absent: number) =>
  fc.oneof(
    { weight: present, arbitrary: arb },
    { weight: absent, arbitrary: fc.constant(undefined) },
  )

export interface Field {
  key: string
  value: Json
}

interface ObjectBody {
  fields: Field[]
  text: string
}

export function objectText(fields: Field[], ws: string): string {
  const members = fields.map((f) => `${JSON.stringify(f.key)}${ws}:${ws}${f.value.raw}`)
  return `{${ws}${members.join(`${ws},${ws}`)}${ws}}`
}

/** JSON objects near NewPet: each field right, wrong, missing, or joined by others. */
export const objectBodyArb: Arbitrary<ObjectBody> = fc
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

export type Verdict =
  | { valid: true; pet: NewPet }
  | { valid: false; message: string; fields?: never }
  | { valid: false; fields: string[]; message?: never }

/** What the contract says of a JSON object body: the pet it makes, or what is wrong with it. */
export function judge(fields: Field[]): Verdict {
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

/** A valid NewPet and its compact JSON text. */
export const validPetArb: Arbitrary<{ pet: NewPet; text: string }> = fc
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
export const headerChar: Arbitrary<string> = fc.oneof(
  { weight: 20, arbitrary: codePoint(0x20, 0x7e) },
  { weight: 1, arbitrary: fc.constant('\t') },
  { weight: 3, arbitrary: codePoint(0x80, 0xff) },
)
