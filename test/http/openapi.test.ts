// The OpenAPI document: valid 3.1, exactly the interface, and the very schemas the service validates with.
import assert from 'node:assert/strict'
import { describe, test } from 'node:test'
import SwaggerParser from '@apidevtools/swagger-parser'
import { isInteger, parse, stringify } from 'lossless-json'
import { errorCodes } from '../../src/errors.js'
import { componentSchemas } from '../../src/pets/schemas.js'
import { createPet, json, testApp } from '../support/app.js'

type Obj = Record<string, unknown>

const PRODUCTION = 'https://api.pets.test/v1'
const STAGING = 'https://staging.pets.test/v1'

const obj = (v: unknown, where: string): Obj => {
  assert.ok(v !== null && typeof v === 'object' && !Array.isArray(v), `${where} is an object`)
  return v as Obj
}

/** Walks a path of keys into the document, failing with the path when a step is missing. */
function at(doc: unknown, ...keys: string[]): Obj {
  let node = obj(doc, 'document')
  for (const [i, k] of keys.entries()) node = obj(node[k], keys.slice(0, i + 1).join(' > '))
  return node
}

/** Integers a JS number cannot hold become BigInts; all else a number. */
const exactNumber = (text: string) =>
  isInteger(text) && !Number.isSafeInteger(Number(text)) ? BigInt(text) : Number(text)

async function fetchDocument(t: Parameters<typeof testApp>[0]) {
  const app = await testApp(t, { config: { productionUrl: PRODUCTION, stagingUrl: STAGING } })
  // No Authorization header: the document is public.
  const res = await app.app.inject({ method: 'GET', url: '/v1/openapi.json' })
  assert.equal(res.statusCode, 200)
  assert.match(String(res.headers['content-type']), /^application\/json/)
  // `exact` keeps every digit of the int64 bounds, which JSON.parse would round.
  return { app, doc: json(res) as Obj, exact: parse(res.body, null, exactNumber) as Obj }
}

const ref = (name: string) => ({ $ref: `#/components/schemas/${name}` })

describe('GET /v1/openapi.json', () => {
  test('is served without authentication and validates as OpenAPI 3.1', async (t) => {
    const { doc } = await fetchDocument(t)
    assert.match(String(doc.openapi), /^3\.1\.\d+$/)
    await SwaggerParser.validate(structuredClone(doc) as never)
    assert.equal(at(doc, 'info').version, '1.0.0')
  })

  test('has exactly the four operations, at paths relative to servers ending in /v1', async (t) => {
    const { doc } = await fetchDocument(t)
    const paths = at(doc, 'paths')
    // Internal routes (/healthz, /readyz, /openapi.json, /docs) are not documented.
    assert.deepEqual(Object.keys(paths).sort(), ['/pets', '/pets/{petId}', '/store/orders'])
    assert.deepEqual(Object.keys(at(doc, 'paths', '/pets')).sort(), ['get', 'post'])
    assert.deepEqual(Object.keys(at(doc, 'paths', '/pets/{petId}')), ['get'])
    assert.deepEqual(Object.keys(at(doc, 'paths', '/store/orders')), ['get'])

    const ops = [
      ['/pets', 'get', 'listPets', 'List all animals', 'animals'],
      ['/pets', 'post', 'createPet', 'Add an animal', 'animals'],
      ['/pets/{petId}', 'get', 'getPet', 'Get an animal', 'animals'],
      ['/store/orders', 'get', 'listOrders', 'List store orders', 'orders'],
    ] as const
    for (const [path, method, operationId, summary, tag] of ops) {
      const op = at(doc, 'paths', path, method)
      assert.equal(op.operationId, operationId)
      assert.equal(op.summary, summary)
      assert.deepEqual(op.tags, [tag])
      assert.equal(op.deprecated === true, operationId === 'getPet', `${operationId} deprecated`)
    }
    const text = JSON.stringify(doc)
    for (const internal of ['/healthz', '/readyz', '/openapi.json', '/docs']) {
      assert.equal(text.includes(`"${internal}`), false, `${internal} must not appear as a path`)
    }
  })

  test('GET /store/orders: its answers as the service gives them, 501 the only outcome of a valid request', async (t) => {
    const { app, doc } = await fetchDocument(t)
    const op = at(doc, 'paths', '/store/orders', 'get')
    assert.equal(op.parameters, undefined)
    assert.equal(op.requestBody, undefined)
    const responses = at(op, 'responses')
    assert.deepEqual(Object.keys(responses), ['400', '401', '429', '500', '501', '503', 'default'])
    for (const [status, response] of Object.entries(responses)) {
      assert.deepEqual(at(response, 'content', 'application/json').schema, ref('Error'), status)
    }
    assert.equal(at(responses, '401', 'headers', 'WWW-Authenticate').required, true)
    assert.equal(at(responses, '429', 'headers', 'Retry-After').required, true)

    // What the document says is what the service answers (each inject is also checked against
    // the document by test/support/conformance.ts).
    const unauthenticated = await app.app.inject({ method: 'GET', url: '/v1/store/orders' })
    assert.equal(unauthenticated.statusCode, 401)
    assert.equal(unauthenticated.headers['www-authenticate'], 'Bearer realm="petstore"')
    assert.equal((json(unauthenticated) as Obj).code, 'unauthorized')
    const res = await app.call({ method: 'GET', url: '/v1/store/orders?limit=5' })
    assert.equal(res.statusCode, 501)
    assert.deepEqual(json(res), {
      code: 'not_implemented',
      message: 'store orders are not implemented by this service',
      status: 501,
    })
    const badHost = await app.call({
      method: 'GET',
      url: '/v1/store/orders',
      headers: { host: 'a b' },
    })
    assert.equal(badHost.statusCode, 400)
    assert.equal((json(badHost) as Obj).code, 'invalid_request')
  })

  test('root tags, tag groups, servers from configuration, and bearer security', async (t) => {
    const { doc } = await fetchDocument(t)
    // The interface's operations are under its one tag "animals"; "orders" holds the orders
    // operation it refers to, so that each group shows something and each operation once.
    assert.deepEqual(
      (doc.tags as Obj[]).map((tag) => tag.name),
      ['animals', 'orders'],
    )
    assert.deepEqual(doc['x-tagGroups'], [
      { name: 'Store', tags: ['orders'] },
      { name: 'Pets', tags: ['animals'] },
    ])
    assert.deepEqual(
      (doc.servers as Obj[]).map((s) => s.url),
      [PRODUCTION, STAGING],
    )
    assert.deepEqual(at(doc, 'components', 'securitySchemes', 'bearerAuth'), {
      type: 'http',
      scheme: 'bearer',
    })
    assert.deepEqual(doc.security, [{ bearerAuth: [] }])
  })

  test('the Error code enum is exactly the fixed set of src/errors.ts', async (t) => {
    const { doc } = await fetchDocument(t)
    const error = at(doc, 'components', 'schemas', 'Error')
    assert.deepEqual([...(error.required as string[])].sort(), ['code', 'message', 'status'])
    assert.deepEqual(at(error, 'properties', 'code'), {
      type: 'string',
      enum: [...errorCodes],
      description: 'Machine-readable error code.',
      example: 'not_found',
    })
    assert.deepEqual(at(error, 'properties', 'message').type, 'string')
    assert.deepEqual(at(error, 'properties', 'status').type, 'integer')
    assert.deepEqual([...errorCodes].sort(), [
      'gone',
      'idempotency_key_in_progress',
      'idempotency_key_reused',
      'internal_error',
      'invalid_request',
      'method_not_allowed',
      'not_found',
      'not_implemented',
      'payload_too_large',
      'rate_limited',
      'service_unavailable',
      'unauthorized',
      'unsupported_media_type',
    ])
  })

  test('every response of the interface is documented with its body and headers', async (t) => {
    const { doc } = await fetchDocument(t)
    const expected = [
      ['/pets', 'get', '200', 'Pets', ['Link']],
      ['/pets', 'get', '401', 'Error', ['WWW-Authenticate']],
      ['/pets', 'post', '201', 'Pet', ['Location']],
      ['/pets', 'post', '400', 'Error', []],
      ['/pets', 'post', '401', 'Error', ['WWW-Authenticate']],
      ['/pets/{petId}', 'get', '200', 'Pet', ['Deprecation', 'Sunset']],
      ['/pets/{petId}', 'get', '401', 'Error', ['WWW-Authenticate', 'Deprecation', 'Sunset']],
      ['/pets/{petId}', 'get', '404', 'Error', ['Deprecation', 'Sunset']],
    ] as const
    for (const [path, method, status, schema, headerNames] of expected) {
      const where = `${method.toUpperCase()} ${path} ${status}`
      const response = at(doc, 'paths', path, method, 'responses', status)
      assert.equal(typeof response.description, 'string', `${where} has a description`)
      assert.deepEqual(
        at(response, 'content', 'application/json').schema,
        ref(schema),
        `${where} body`,
      )
      for (const name of headerNames) {
        const header = at(response, 'headers', name)
        assert.equal(at(header, 'schema').type, 'string', `${where} header ${name}`)
      }
    }
    // Every response of the deprecated operation documents the deprecation headers.
    for (const [status, response] of Object.entries(
      at(doc, 'paths', '/pets/{petId}', 'get', 'responses'),
    )) {
      for (const name of ['Deprecation', 'Sunset', 'Link']) {
        assert.ok(at(response, 'headers', name), `getPet ${status} documents ${name}`)
      }
    }
    const body = at(doc, 'paths', '/pets', 'post', 'requestBody')
    assert.equal(body.required, true)
    assert.deepEqual(at(body, 'content', 'application/json').schema, ref('NewPet'))
    // Every 4xx/5xx response of every operation is the Error body.
    for (const [path, methods] of Object.entries(at(doc, 'paths'))) {
      for (const [method, op] of Object.entries(obj(methods, path))) {
        for (const [status, response] of Object.entries(at(op, 'responses'))) {
          if (Number(status) < 400) continue
          assert.deepEqual(
            at(response, 'content', 'application/json').schema,
            ref('Error'),
            `${method} ${path} ${status}`,
          )
        }
      }
    }
  })

  test('links: createPet to getPet by the created id, listPets to its next page', async (t) => {
    const { app, doc } = await fetchDocument(t)
    const operations = new Map<string, Obj>()
    for (const methods of Object.values(at(doc, 'paths'))) {
      for (const op of Object.values(obj(methods, 'path')) as Obj[]) {
        operations.set(String(op.operationId), op)
      }
    }
    const linksOf = (id: string, status: string) =>
      at(operations.get(id), 'responses', status, 'links')
    assert.deepEqual(Object.keys(linksOf('createPet', '201')), ['getCreatedPet'])
    assert.deepEqual(Object.keys(linksOf('listPets', '200')), ['nextPage'])
    const created = at(linksOf('createPet', '201'), 'getCreatedPet')
    assert.equal(created.operationId, 'getPet')
    assert.deepEqual(created.parameters, { petId: '$response.body#/id' })
    const next = at(linksOf('listPets', '200'), 'nextPage')
    assert.equal(next.operationId, 'listPets')
    assert.deepEqual(next.parameters, {
      limit: '$request.query.limit',
      status: '$request.query.status',
    })
    // Every link names an operation, and only parameters that operation takes.
    for (const link of [created, next]) {
      const target = operations.get(String(link.operationId))
      assert.ok(target, String(link.operationId))
      const names = (target.parameters as Obj[]).map((p) => p.name)
      for (const name of Object.keys(link.parameters as Obj)) assert.ok(names.includes(name), name)
    }

    // Followed as a tool would: the get by the created body's `id` answers the created pet.
    const res = await createPet(app, { name: 'Rex', categoryId: 12 })
    assert.equal(res.statusCode, 201)
    const pet = json(res) as Obj
    const followed = await app.call({ method: 'GET', url: `/v1/pets/${pet.id}` })
    assert.equal(followed.statusCode, 200)
    assert.deepEqual(json(followed), pet)
    assert.equal(res.headers.location, `/v1/pets/${pet.id}`)
  })

  test('parameters: limit range and default, int64 identifiers', async (t) => {
    const { doc, exact } = await fetchDocument(t)
    const params = at(doc, 'paths', '/pets', 'get').parameters as Obj[]
    const limit = params.find((p) => p.name === 'limit')
    assert.ok(limit)
    assert.equal(limit.in, 'query')
    assert.equal(limit.required, false)
    assert.deepEqual(obj(limit.schema, 'limit schema'), {
      type: 'integer',
      format: 'int32',
      minimum: 1,
      maximum: 100,
      default: 20,
    })
    const status = params.find((p) => p.name === 'status')
    assert.ok(status)
    assert.deepEqual(status.schema, ref('PetStatus'))
    assert.deepEqual(at(doc, 'components', 'schemas', 'PetStatus').enum, [
      'available',
      'pending',
      'sold',
    ])

    const petId = (at(doc, 'paths', '/pets/{petId}', 'get').parameters as Obj[]).find(
      (p) => p.name === 'petId',
    )
    assert.ok(petId)
    assert.equal(petId.in, 'path')
    assert.equal(petId.required, true)
    const int64 = {
      type: 'integer',
      format: 'int64',
      minimum: -(2n ** 63n),
      maximum: 2n ** 63n - 1n,
    }
    const exactPetId = (at(exact, 'paths', '/pets/{petId}', 'get').parameters as Obj[])[0]!
    assert.deepEqual(exactPetId.schema, int64)

    const pet = at(doc, 'components', 'schemas', 'Pet')
    const newPet = at(doc, 'components', 'schemas', 'NewPet')
    for (const [name, schema, field] of [
      ['Pet', pet, 'id'],
      ['Pet', pet, 'categoryId'],
      ['NewPet', newPet, 'categoryId'],
    ] as const) {
      const prop = at(exact, 'components', 'schemas', name, 'properties', field)
      const { description: _d, example, ...range } = prop
      assert.deepEqual(range, field === 'id' ? { ...int64, minimum: 1 } : int64, `${name}.${field}`)
      assert.equal(example, field === 'id' ? 1 : 12, `${name}.${field} example`)
      assert.ok(at(schema, 'properties', field))
    }
    assert.deepEqual(pet.required, ['id', 'name', 'categoryId'])
    assert.deepEqual(newPet.required, ['name', 'categoryId'])
    assert.equal(at(newPet, 'properties').id, undefined)
    assert.deepEqual(at(at(doc, 'components', 'schemas', 'Pets'), 'items'), ref('Pet'))
  })

  test('the NewPet component is the schema the service validates bodies with', async (t) => {
    const { app, exact } = await fetchDocument(t)
    const newPet = at(exact, 'components', 'schemas', 'NewPet')
    assert.equal(newPet.additionalProperties, false)
    // Two whole string schemas, each with its own pattern: generators keep both (orval's zod
    // writes `.and(...)`), and neither needs a regex engine in Unicode mode.
    const [text, storable] = at(newPet, 'properties', 'name').allOf as Obj[]
    assert.deepEqual(text, {
      type: 'string',
      minLength: 1,
      maxLength: 255,
      pattern:
        '[^\\u0009-\\u000D\\u0020\\u0085\\u00A0\\u1680\\u2000-\\u200A\\u2028\\u2029\\u202F\\u205F\\u3000]',
      'x-pattern-message': 'must contain a character that is not white space',
    })
    assert.deepEqual(storable, {
      type: 'string',
      maxLength: 255,
      pattern: '^[^\\u0000]*$',
      'x-pattern-message': 'must not contain the character U+0000',
    })
    // Byte for byte the route's schema, with the nested PetStatus hoisted to a $ref.
    const source = parse(stringify(componentSchemas.NewPet) as string, null, exactNumber) as Obj
    at(source, 'properties').status = ref('PetStatus')
    assert.deepEqual(newPet, source)

    // What the document forbids, the service refuses.
    const forbidden: [Obj, string][] = [
      [{ name: 'Rex', categoryId: 1, colour: 'brown' }, "unknown field 'colour'"],
      // A name as long as the body may be is cut short: the message stays within its maxLength.
      [
        { name: 'Rex', categoryId: 1, ['x'.repeat(60_000)]: 1 },
        `unknown field '${'x'.repeat(64)}…'`,
      ],
      [{ name: 'x'.repeat(256), categoryId: 1 }, "field 'name' must be 1 to 255 characters long"],
      [{ name: 'Rex' }, "missing required field 'categoryId'"],
      [{ name: 'a\u0000b', categoryId: 1 }, "field 'name' must not contain the character U+0000"],
      [
        { name: '\u3000', categoryId: 1 },
        "field 'name' must contain a character that is not white space",
      ],
    ]
    for (const [body, message] of forbidden) {
      const res = await createPet(app, body)
      assert.equal(res.statusCode, 400, JSON.stringify(body))
      assert.deepEqual(json(res), { code: 'invalid_request', message, status: 400 })
    }
    // The longest name the document allows is accepted.
    const ok = await createPet(app, { name: 'x'.repeat(255), categoryId: 1 })
    assert.equal(ok.statusCode, 201)
    const list = await app.call({ method: 'GET', url: '/v1/pets' })
    assert.deepEqual(json(list), [{ id: 1, name: 'x'.repeat(255), categoryId: 1 }])
  })
})
