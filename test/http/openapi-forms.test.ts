// The document's four forms: JSON and YAML, as OpenAPI 3.1 and as a 3.0 rendition. Each is public,
// says the same as the JSON 3.1 document, and keeps every digit of the int64 bounds; a validator
// that reads only 3.0 refuses the 3.1 document and accepts the rendition. Also the document's
// contact and licence, from the settings.
import assert from 'node:assert/strict'
import { describe, test } from 'node:test'
import SwaggerParser from '@apidevtools/swagger-parser'
import { isInteger, parse } from 'lossless-json'
import oasValidator from 'oas-validator'
import { parse as parseYaml } from 'yaml'
import { toOpenApi30 } from '../../src/http/openapi-30.js'
import { type TestApp, testApp } from '../support/app.js'
import { storeIndependent } from '../support/stores.js'

type Obj = Record<string, unknown>

/** Integers a JS number cannot hold become BigInts; all else a number. */
const exactNumber = (text: string) =>
  isInteger(text) && !Number.isSafeInteger(Number(text)) ? BigInt(text) : Number(text)

const INT64_MAX = '9223372036854775807'
const INT64_MIN = '-9223372036854775808'

/** A form of the document, fetched without a key: its text and what it says, read exactly. */
async function form(app: TestApp, path: string): Promise<{ text: string; doc: Obj }> {
  const res = await app.app.inject({ method: 'GET', url: path })
  assert.equal(res.statusCode, 200, path)
  const yaml = path.endsWith('.yaml')
  assert.equal(
    res.headers['content-type'],
    yaml ? 'application/yaml' : 'application/json; charset=utf-8',
    path,
  )
  // YAML integers come back as BigInts; small ones are numbers again, as in the JSON reading.
  const doc = yaml
    ? (parseYaml(
        res.body,
        (_key: unknown, v: unknown) =>
          typeof v === 'bigint' && Number.isSafeInteger(Number(v)) ? Number(v) : v,
        { intAsBigInt: true },
      ) as Obj)
    : (parse(res.body, null, exactNumber) as Obj)
  return { text: res.body, doc }
}

/** What oas-validator says of a document: `valid`, or its first complaint. */
async function oasValidate(doc: Obj): Promise<string> {
  try {
    await oasValidator.validate(structuredClone(doc), {})
    return 'valid'
  } catch (err) {
    return (err as Error).message
  }
}

/** Every key anywhere in the document. */
function keysOf(node: unknown, found = new Set<string>()): Set<string> {
  if (Array.isArray(node)) for (const n of node) keysOf(n, found)
  else if (node !== null && typeof node === 'object') {
    for (const [k, v] of Object.entries(node)) {
      found.add(k)
      keysOf(v, found)
    }
  }
  return found
}

storeIndependent(() => {
  describe('the forms of the OpenAPI document', () => {
    test('YAML 3.1 says exactly what JSON 3.1 says, with every digit of int64', async (t) => {
      const app = await testApp(t)
      const json = await form(app, '/v1/openapi.json')
      const yaml = await form(app, '/v1/openapi.yaml')
      assert.deepEqual(yaml.doc, json.doc)
      assert.equal(json.doc.openapi, '3.1.0')
      for (const text of [json.text, yaml.text]) {
        assert.ok(text.includes(INT64_MAX) && text.includes(INT64_MIN), 'int64 bounds in full')
      }
      assert.match(yaml.text, /^openapi: "3\.1\.0"\ninfo:\n {2}title: "Pet Store"\n/)
      // A validator reading the YAML as most tools do (numbers as doubles) accepts it too.
      await SwaggerParser.validate(parseYaml(yaml.text) as never)
    })

    test('the 3.0 rendition: refused 3.1, accepted as 3.0 by a 3.0-only validator', async (t) => {
      const app = await testApp(t)
      const doc31 = (await form(app, '/v1/openapi.json')).doc
      const json30 = await form(app, '/v1/openapi-3.0.json')
      const yaml30 = await form(app, '/v1/openapi-3.0.yaml')
      assert.deepEqual(yaml30.doc, json30.doc)
      assert.deepEqual(json30.doc, toOpenApi30(doc31))
      assert.equal(json30.doc.openapi, '3.0.3')
      for (const text of [json30.text, yaml30.text]) {
        assert.ok(text.includes(INT64_MAX) && text.includes(INT64_MIN), 'int64 bounds in full')
      }

      // oas-validator reads only 3.0: it refuses the 3.1 document, and the 3.1 document merely
      // relabelled 3.0 (its `const` is not 3.0), and accepts the rendition.
      assert.equal(await oasValidate(doc31), 'Must be an OpenAPI 3.0.x document')
      assert.match(await oasValidate({ ...doc31, openapi: '3.0.3' }), /cannot have .*const/)
      assert.equal(await oasValidate(JSON.parse(json30.text) as Obj), 'valid')
      assert.equal(await oasValidate(parseYaml(yaml30.text) as Obj), 'valid')
      await SwaggerParser.validate(JSON.parse(json30.text) as never)

      // What differs: `const` is a one-value `enum`; everything else is as in 3.1.
      assert.ok(keysOf(doc31).has('const'))
      assert.equal(keysOf(json30.doc).has('const'), false)
      const cacheControl = (doc: Obj) =>
        (((((doc.paths as Obj)['/pets'] as Obj).get as Obj).responses as Obj)['200'] as Obj)
          .headers as Obj
      assert.deepEqual((cacheControl(json30.doc)['Cache-Control'] as Obj).schema, {
        type: 'string',
        enum: ['no-store'],
      })
      assert.deepEqual((cacheControl(doc31)['Cache-Control'] as Obj).schema, {
        type: 'string',
        const: 'no-store',
      })
    })

    test('every form is public and none is in the document', async (t) => {
      const app = await testApp(t)
      const paths = [
        '/v1/openapi.json',
        '/v1/openapi.yaml',
        '/v1/openapi-3.0.json',
        '/v1/openapi-3.0.yaml',
      ]
      const doc = (await form(app, paths[0]!)).doc
      for (const path of paths) {
        await form(app, path)
        assert.equal(path.replace('/v1', '') in (doc.paths as Obj), false, path)
        // Only GET and HEAD are public: another method is a /v1 request like any, 401 without a key.
        const head = await app.app.inject({ method: 'HEAD', url: path })
        assert.equal(head.statusCode, 200, path)
        const post = await app.app.inject({ method: 'POST', url: path })
        assert.equal(post.statusCode, 401, path)
      }
    })
  })

  describe('contact and licence', () => {
    test('absent unless set', async (t) => {
      const app = await testApp(t)
      const info = (await form(app, '/v1/openapi.json')).doc.info as Obj
      assert.deepEqual(info, {
        title: 'Pet Store',
        version: '1.0.0',
        description: 'The catalogue of animals of a pet store.',
      })
    })

    test('as the settings give them, in every form', async (t) => {
      const app = await testApp(t, {
        config: {
          openapiContactName: 'Pet Store API team',
          openapiContactEmail: 'api@petstore.dev',
          openapiLicenseName: 'Apache-2.0',
          openapiLicenseUrl: 'https://www.apache.org/licenses/LICENSE-2.0',
        },
      })
      for (const path of ['/v1/openapi.json', '/v1/openapi.yaml', '/v1/openapi-3.0.json']) {
        const info = (await form(app, path)).doc.info as Obj
        assert.deepEqual(info.contact, { name: 'Pet Store API team', email: 'api@petstore.dev' })
        assert.deepEqual(info.license, {
          name: 'Apache-2.0',
          url: 'https://www.apache.org/licenses/LICENSE-2.0',
        })
      }
      const nameOnly = await testApp(t, {
        config: { openapiLicenseName: 'Proprietary', openapiContactUrl: 'https://petstore.dev/' },
      })
      const info = (await form(nameOnly, '/v1/openapi.json')).doc.info as Obj
      assert.deepEqual(info.contact, { url: 'https://petstore.dev/' })
      assert.deepEqual(info.license, { name: 'Proprietary' })
    })
  })
})
