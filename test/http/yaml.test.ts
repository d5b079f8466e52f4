// The YAML writer of the document's YAML forms: what it writes reads back the same, strings that
// YAML would take for something else included, and integers of any size with every digit.
import assert from 'node:assert/strict'
import { test } from 'node:test'
import { parse } from 'yaml'
import { toYaml } from '../../src/http/yaml.js'
import { storeIndependent } from '../support/stores.js'

const awkward = [
  '',
  ' ',
  ' leading',
  'trailing ',
  'true',
  'False',
  'null',
  'yes',
  'No',
  'on',
  'y',
  '~',
  '1',
  '1.5',
  '0x1F',
  '1e3',
  '.inf',
  '-',
  '- x',
  'a: b',
  'a #b',
  '#x',
  '[x]',
  '{x}',
  '*x',
  '&x',
  '!x',
  '|',
  '>',
  '%x',
  '@x',
  '`x`',
  "'x'",
  '"x"',
  'a\\b',
  'line\nbreak',
  'tab\there',
  '\u0000\u0007\u001b',
  '\u007f\u0085\u009f',
  '\u2028\u2029',
  '\ufeffmark',
  'Ünïcödé … →',
  '🐈 astral',
  '/v1/pets/{petId}',
  'application/json',
  '$ref',
  '<https://x/v1/pets?limit=20&cursor=djE6MjA>; rel="next"',
]

storeIndependent(() => {
  test('strings of every awkward kind read back as written, as values and as keys', () => {
    const value = {
      values: awkward,
      keys: Object.fromEntries(awkward.map((s, i) => [s, i])),
      nested: awkward.map((s) => ({ [s]: [s, { [s]: s }] })),
    }
    assert.deepEqual(parse(toYaml(value)), value)
  })

  test('numbers, BigInts, booleans, null, empty and nested collections', () => {
    const value = {
      '200': { int64: [2n ** 63n - 1n, -(2n ** 63n)], small: [0, -1, 1.5, 1e21, -0.25] },
      flags: [true, false, null],
      empty: { object: {}, array: [], string: '' },
      deep: [[[1, 2], []], [{}], [{ a: [{ b: [] }] }]],
    }
    const text = toYaml(value)
    assert.ok(text.includes('9223372036854775807') && text.includes('-9223372036854775808'))
    assert.deepEqual(parse(text, { intAsBigInt: true }), {
      ...value,
      '200': {
        int64: value['200'].int64,
        small: [0n, -1n, 1.5, 1e21, -0.25],
      },
      deep: [[[1n, 2n], []], [{}], [{ a: [{ b: [] }] }]],
    })
    assert.equal(toYaml([]), '[]\n')
    assert.equal(toYaml('x'), 'x\n')
    assert.throws(() => toYaml({ n: Number.NaN }), /no JSON form/)
  })

  test('block style, keys plain where they can be', () => {
    assert.equal(
      toYaml({ openapi: '3.1.0', paths: { '/pets': { get: { tags: ['animals'] } } } }),
      'openapi: "3.1.0"\npaths:\n  /pets:\n    get:\n      tags:\n        - animals\n',
    )
    assert.equal(toYaml([{ a: 1, b: [2] }]), '- a: 1\n  b:\n    - 2\n')
  })
})
