// The document's YAML forms read back, by a YAML 1.2 reader and by a 1.1 one, as exactly the
// document, int64 bounds with every digit; strings a 1.1 reader could take for another type stay
// strings.
import assert from 'node:assert/strict'
import { test } from 'node:test'
import { parse } from 'yaml'
import { toOpenApi30 } from '../../src/http/openapi-30.js'
import { toYaml } from '../../src/http/yaml.js'
import { testApp } from '../support/app.js'
import { storeIndependent } from '../support/stores.js'

/** A value as YAML reads it with exact integers: every integer a BigInt. */
const exact = (v: unknown): unknown =>
  Array.isArray(v)
    ? v.map(exact)
    : v !== null && typeof v === 'object'
      ? Object.fromEntries(Object.entries(v).map(([k, x]) => [k, exact(x)]))
      : Number.isInteger(v)
        ? BigInt(v as number)
        : v

storeIndependent(() => {
  test('each YAML form served reads back as the document, int64 bounds in full', async (t) => {
    const { app } = await testApp(t)
    const forms = [
      ['/v1/openapi.yaml', (doc: Record<string, unknown>) => doc],
      ['/v1/openapi-3.0.yaml', toOpenApi30],
    ] as const
    for (const [url, form] of forms) {
      const res = await app.inject({ method: 'GET', url })
      assert.equal(res.statusCode, 200, url)
      assert.ok(
        res.body.includes('9223372036854775807') && res.body.includes('-9223372036854775808'),
      )
      const doc = form(app.swagger() as unknown as Record<string, unknown>)
      for (const version of ['1.2', '1.1'] as const) {
        assert.deepEqual(
          parse(res.body, { intAsBigInt: true, version }),
          exact(doc),
          `${url} read as YAML ${version}`,
        )
      }
    }
  })

  test('strings a YAML 1.1 reader takes for booleans, nulls, numbers or dates stay strings', () => {
    const awkward = ['yes', 'No', 'on', 'y', '~', 'null', '', '0x1F', '1:20', '1e3', '.inf']
    awkward.push('2001-12-14', '- x', 'a: b', '#x', '&x', 'line\nbreak', '\u0085\u2028\ufeff')
    const value = { values: awkward, keys: Object.fromEntries(awkward.map((s, i) => [s, i])) }
    for (const version of ['1.2', '1.1'] as const) {
      assert.deepEqual(
        parse(toYaml(value), { intAsBigInt: true, version }),
        exact(value),
        `read as YAML ${version}`,
      )
    }
  })
})
