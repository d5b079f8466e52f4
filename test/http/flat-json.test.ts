// The flat-object fast path of request bodies against the full parser it stands in for: whenever
// it answers, its answer must be lossless-json's, as parseJsonBody calls it.
import assert from 'node:assert/strict'
import { test } from 'node:test'
import fc from 'fast-check'
import { isInteger, parse } from 'lossless-json'
import { parseFlatJsonObject, parseJsonBody } from '../../src/http/json-body.js'
import { storeIndependent } from '../support/stores.js'

const LONE_SURROGATE = /\p{Cs}/u
/** parseJsonBody's own call of lossless-json, written out again so the test does not share it. */
function full(text: string): { value: unknown } | { error: string } {
  try {
    return {
      value: parse(
        text,
        (key, value) => {
          if (
            LONE_SURROGATE.test(key) ||
            (typeof value === 'string' && LONE_SURROGATE.test(value))
          ) {
            throw new Error('lone surrogate')
          }
          return value
        },
        (literal) => (isInteger(literal) ? BigInt(literal) : Number(literal)),
      ),
    }
  } catch (err) {
    return { error: (err as Error).message }
  }
}

/** Pieces that flat bodies are made of, and pieces that break them in every way that matters. */
const piece = fc.constantFrom(
  '{',
  '}',
  '"',
  ':',
  ',',
  ' ',
  '\n',
  '\t',
  '\r',
  '\u00a0',
  '\\',
  '\\"',
  '\\u0041',
  '\\ud800',
  '\u0001',
  '"name"',
  '"categoryId"',
  '"status"',
  '"__proto__"',
  '"constructor"',
  '"Rex"',
  '"sold"',
  '"é✓𝄞"',
  '""',
  '0',
  '-0',
  '7',
  '-',
  '007',
  '9223372036854775807',
  '18446744073709551616',
  '1.5',
  '1e3',
  '2E-1',
  '.5',
  'true',
  'false',
  'null',
  'nul',
  'truex',
  '[]',
  '[1]',
  '{}',
  '{"a":1}',
)

/** A flat object's text, well formed, with whitespace and duplicate keys now and then. */
const flatObject = fc
  .array(
    fc.tuple(
      fc.constantFrom('name', 'categoryId', 'status', 'a', '__proto__', 'x y', 'é', ''),
      fc.oneof(
        fc.string().map((s) => JSON.stringify(s)),
        fc.bigInt({ min: -(2n ** 70n), max: 2n ** 70n }).map(String),
        fc.constantFrom('true', 'false', 'null', '1.0', '-0', '1e2', '[]', '{}'),
      ),
      fc.constantFrom('', ' ', '\n\t', '\r\n  '),
    ),
    { maxLength: 5 },
  )
  .map(
    (pairs) =>
      `{${pairs.map(([k, v, ws]) => `${ws}${JSON.stringify(k)}${ws}:${ws}${v}${ws}`).join(',')}}`,
  )

const texts = fc.oneof(
  flatObject,
  fc.array(piece, { maxLength: 14 }).map((p) => p.join('')),
  fc
    .tuple(flatObject, fc.nat(), piece)
    .map(([t, at, p]) => t.slice(0, at % (t.length + 1)) + p + t.slice(at % (t.length + 1))),
  fc.json(),
)

storeIndependent(() => {
  test('the fast path answers only as the full parser would', () => {
    fc.assert(
      fc.property(texts, (text) => {
        const fast = parseFlatJsonObject(text)
        if (fast === undefined) return
        const expected = full(text)
        if (!('value' in expected)) {
          assert.fail(`the full parser refuses ${JSON.stringify(text)}: ${expected.error}`)
        }
        assert.deepStrictEqual(fast, expected.value, JSON.stringify(text))
      }),
      { numRuns: 20_000, includeErrorInReport: true },
    )
  })

  test('the fast path takes the usual bodies, and leaves the others to the full parser', () => {
    assert.deepStrictEqual(
      parseFlatJsonObject('{"name":"bench-pet","categoryId":7,"status":"available"}'),
      {
        name: 'bench-pet',
        categoryId: 7n,
        status: 'available',
      },
    )
    assert.deepStrictEqual(
      parseFlatJsonObject(
        ' {\n "name" : "Rex ✓" , "categoryId" : -9223372036854775808 ,"status":null, "x": true}\r\n',
      ),
      { name: 'Rex ✓', categoryId: -9223372036854775808n, status: null, x: true },
    )
    assert.deepStrictEqual(parseFlatJsonObject('{}'), {})
    for (const text of [
      '{"name":"a\\"b"}', // an escape
      '{"name":"\\ud800"}', // a lone surrogate, which the reviver refuses
      '{"categoryId":1.0}', // a fraction: a Number
      '{"categoryId":1e2}',
      '{"categoryId":01}',
      '{"a":1,"a":1}', // a repeated key
      '{"__proto__":1}',
      '{"a":{"b":1}}', // nested
      '{"a":[1]}',
      '{"a":1,}',
      '{"a":1} x',
      '[1]',
      '"a"',
      '',
    ]) {
      assert.equal(parseFlatJsonObject(text), undefined, text)
    }
  })

  test("parseJsonBody gives the full parser's answers and errors where the fast path declines", () => {
    const body = (text: string) => parseJsonBody(Buffer.from(text))
    assert.deepStrictEqual(body('{"categoryId":1.0}'), { categoryId: 1 })
    assert.deepStrictEqual(body('{"name":"a\\u0041"}'), { name: 'aA' })
    // A key repeated with the same value is not ambiguous (docs/api-behaviour.md): taken once.
    assert.deepStrictEqual(body('{"a":1,"a":1}'), { a: 1n })
    assert.throws(() => body('{"a":1,"a":2}'), {
      message: "request body is not valid JSON: Duplicate key 'a' encountered at position 8",
    })
    assert.throws(() => body('{"name":"\\ud800"}'), {
      message: 'request body contains a lone UTF-16 surrogate escape',
    })
    assert.throws(() => body('{"name":"a\u0001"}'), {
      message: /^request body is not valid JSON: /,
    })
  })
})
