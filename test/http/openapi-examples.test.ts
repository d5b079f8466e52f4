// The document's examples: every parameter and property has one, each is valid for its own schema
// by the service's own validator, reads the same through JSON.parse as exactly, and the service
// answers them as the document says. Also: the `name` patterns mean the same with and without a
// regex engine's Unicode mode, and accept and refuse exactly what `\p{White_Space}` did.
import assert from 'node:assert/strict'
import { describe, test } from 'node:test'
import { isInteger, parse, stringify } from 'lossless-json'
import { type ErrorCode, errorStatus } from '../../src/errors.js'
import { parseJsonBody } from '../../src/http/json-body.js'
import { createValidatorCompiler } from '../../src/http/validation.js'
import { NOT_ONLY_WHITE_SPACE, WITHOUT_U0000 } from '../../src/pets/schemas.js'
import { json, type TestApp, testApp } from '../support/app.js'
import { storeIndependent } from '../support/stores.js'

type Obj = Record<string, unknown>

const isObj = (v: unknown): v is Obj => v !== null && typeof v === 'object' && !Array.isArray(v)

/** Integers a JS number cannot hold become BigInts, as in test/http/openapi.test.ts. */
const exactNumber = (text: string) =>
  isInteger(text) && !Number.isSafeInteger(Number(text)) ? BigInt(text) : Number(text)

async function served(t: Parameters<typeof testApp>[0]): Promise<{ app: TestApp; doc: Obj }> {
  const app = await testApp(t)
  const res = await app.app.inject({ method: 'GET', url: '/v1/openapi.json' })
  assert.equal(res.statusCode, 200)
  const doc = parse(res.body, null, exactNumber) as Obj
  // Tools read the document with JSON.parse: every example must come out the same there.
  const plain = JSON.parse(res.body) as Obj
  for (const { pointer, value } of examplesOf(doc)) {
    const plainValue = at(plain, pointer).example
    assert.equal(stringify(plainValue), stringify(value), `${pointer}: JSON.parse changes it`)
  }
  return { app, doc }
}

/** The node at a JSON pointer. */
function at(doc: Obj, pointer: string): Obj {
  let node: unknown = doc
  for (const raw of pointer.split('/').slice(1)) {
    const key = raw.replace(/~1/g, '/').replace(/~0/g, '~')
    node = (node as Obj)[key]
    assert.ok(node !== null && typeof node === 'object', `${pointer}: nothing at ${key}`)
  }
  return node as Obj
}

const pointerKey = (k: string) => k.replace(/~/g, '~0').replace(/\//g, '~1')

type Holder = 'parameter' | 'header' | 'schema'

/** Every node with an `example`: its pointer, the example, and what holds it. */
function examplesOf(doc: Obj): { pointer: string; value: unknown; holder: Holder }[] {
  const found: { pointer: string; value: unknown; holder: Holder }[] = []
  const visit = (node: unknown, pointer: string, key: string, parent: string): void => {
    if (Array.isArray(node)) {
      for (const [i, n] of node.entries()) visit(n, `${pointer}/${i}`, String(i), key)
    }
    if (!isObj(node) || key === 'example' || key === 'examples') return
    if ('example' in node) {
      const holder =
        typeof node.in === 'string' ? 'parameter' : parent === 'headers' ? 'header' : 'schema'
      found.push({ pointer, value: node.example, holder })
    }
    for (const [k, v] of Object.entries(node)) visit(v, `${pointer}/${pointerKey(k)}`, k, key)
  }
  visit(doc, '', '', '')
  return found
}

/** A schema with its `$ref`s to the document's components inlined, as a route declares it. */
function inline(doc: Obj, schema: unknown): unknown {
  if (Array.isArray(schema)) return schema.map((s) => inline(doc, s))
  if (!isObj(schema)) return schema
  if (typeof schema.$ref === 'string') return inline(doc, at(doc, schema.$ref.slice(1)))
  return Object.fromEntries(Object.entries(schema).map(([k, v]) => [k, inline(doc, v)]))
}

/** A value as the service's body parser reads it: every JSON integer a BigInt. */
const asBody = (value: unknown) => parseJsonBody(Buffer.from(stringify(value) as string))

/** The object a tool composes from the property examples of a component (as Redoc does). */
function sample(doc: Obj, name: string): Obj {
  const properties = at(doc, `/components/schemas/${name}/properties`)
  return Object.fromEntries(
    Object.entries(properties).map(([k, v]) => {
      const schema = inline(doc, v) as Obj
      assert.ok('example' in schema, `${name}.${k} has an example`)
      return [k, schema.example]
    }),
  )
}

const parameter = (doc: Obj, path: string, method: string, name: string) => {
  const found = (at(doc, `/paths/${pointerKey(path)}/${method}`).parameters as Obj[]).find(
    (p) => p.name === name,
  )
  assert.ok(found, `${method} ${path} has parameter ${name}`)
  return found
}

describe('examples of the OpenAPI document', () => {
  test('every parameter and every property of every component has an example', async (t) => {
    const { doc } = await served(t)
    let parameters = 0
    for (const [path, methods] of Object.entries(doc.paths as Obj)) {
      for (const [method, op] of Object.entries(methods as Obj)) {
        for (const p of ((op as Obj).parameters ?? []) as Obj[]) {
          assert.ok('example' in p, `${method} ${path} parameter ${p.name} has an example`)
          parameters++
        }
      }
    }
    // limit, status, cursor, Idempotency-Key, petId
    assert.equal(parameters, 5)
    for (const name of ['Pet', 'NewPet', 'Error']) sample(doc, name)
    assert.equal(at(doc, '/components/schemas/PetStatus').example, 'available')
  })

  test("every example is valid for its own schema, by the service's validator", async (t) => {
    const { doc } = await served(t)
    const compile = createValidatorCompiler()
    const examples = examplesOf(doc)
    assert.ok(examples.length >= 12, `${examples.length} examples`)
    for (const { pointer, value, holder } of examples) {
      const node = at(doc, pointer)
      if (holder === 'parameter') {
        // Parameters arrive as text: validated in an object of the request part, as routes do.
        const name = String(node.name)
        const schema = {
          type: 'object',
          properties: { [name]: inline(doc, node.schema) },
          required: [name],
        }
        const part = { query: 'querystring', path: 'params', header: 'headers' }[String(node.in)]
        assert.ok(part, `${pointer}: parameter in ${node.in}`)
        const validate = compile({ schema, httpPart: part, method: 'GET', url: '/' })
        const ok = validate({ [name]: String(value) }) as boolean
        assert.ok(ok, `${pointer}: ${JSON.stringify(validate.errors)}`)
      } else {
        const validate = compile({
          schema: inline(doc, holder === 'header' ? node.schema : node),
          httpPart: 'body',
          method: 'POST',
          url: '/',
        })
        const ok = validate(asBody(value)) as boolean
        assert.ok(ok, `${pointer}: ${stringify(value)} ${JSON.stringify(validate.errors)}`)
      }
    }
    // An example the schema refuses is caught: the check is not vacuous.
    const petId = at(doc, '/components/schemas/Pet/properties/id')
    const validate = compile({
      schema: inline(doc, petId),
      httpPart: 'body',
      method: 'POST',
      url: '/',
    })
    assert.equal(validate(asBody(0)), false)
  })

  test('the service answers the examples as the document says', async (t) => {
    const { app, doc } = await served(t)
    const newPet = sample(doc, 'NewPet')
    const pet = sample(doc, 'Pet')
    const error = sample(doc, 'Error')
    const petId = parameter(doc, '/pets/{petId}', 'get', 'petId').example
    assert.equal(petId, pet.id, 'the petId example names the Pet example')
    const getPet = () => app.call({ method: 'GET', url: `/v1/pets/${petId}` })

    // Each request below is also checked against the document (test/support/conformance.ts).
    // Before any pet exists: the documented 404, with the Error example as its body.
    const missing = await getPet()
    assert.equal(missing.statusCode, 404)
    assert.deepEqual(json(missing), error)

    const query = ['limit', 'status', 'cursor']
      .map(
        (name) =>
          `${name}=${encodeURIComponent(String(parameter(doc, '/pets', 'get', name).example))}`,
      )
      .join('&')
    const empty = await app.call({ method: 'GET', url: `/v1/pets?${query}` })
    assert.equal(empty.statusCode, 200)
    assert.deepEqual(json(empty), [])

    const idempotencyKey = String(parameter(doc, '/pets', 'post', 'Idempotency-Key').example)
    const create = () =>
      app.call({
        method: 'POST',
        url: '/v1/pets',
        headers: { 'content-type': 'application/json', 'idempotency-key': idempotencyKey },
        payload: stringify(newPet) as string,
      })
    const created = await create()
    assert.equal(created.statusCode, 201, created.body)
    // The first pet of a store has the id of the examples, so the Pet example is what comes back.
    assert.deepEqual(json(created), pet)
    assert.equal(created.headers.location, `/v1/pets/${petId}`)
    const replayed = await create()
    assert.equal(replayed.statusCode, 201)
    assert.equal(replayed.headers['idempotent-replayed'], 'true')
    assert.deepEqual(json(replayed), pet)

    const found = await getPet()
    assert.equal(found.statusCode, 200)
    assert.deepEqual(json(found), pet)

    // The cursor example is the position before the first pet: importers that send it (they
    // send every optional parameter) still get the first page.
    const page = await app.call({ method: 'GET', url: `/v1/pets?${query}` })
    assert.equal(page.statusCode, 200)
    assert.deepEqual(json(page), [pet])
    const first = await app.call({ method: 'GET', url: '/v1/pets?limit=50&status=available' })
    assert.deepEqual(json(first), [pet])

    const orders = await app.call({ method: 'GET', url: '/v1/store/orders' })
    assert.equal(orders.statusCode, 501)
    assert.equal((json(orders) as Obj).code, 'not_implemented')
  })
})

// ---------------------------------------------------------------------------------------------
// The responses' named examples

/** Each response of each operation: where it is, its status, its schema and named examples. */
function responsesOf(doc: Obj) {
  const found: {
    where: string
    status: string
    listed: string[]
    schema: unknown
    examples: Obj
  }[] = []
  for (const [path, methods] of Object.entries(doc.paths as Obj)) {
    for (const [method, op] of Object.entries(methods as Obj)) {
      const responses = (op as Obj).responses as Obj
      const listed = Object.keys(responses)
      for (const [status, response] of Object.entries(responses)) {
        const media = at(response as Obj, '/content/application~1json')
        const where = `${method.toUpperCase()} ${path} ${status}`
        assert.ok(isObj(media.examples), `${where} has named examples`)
        found.push({ where, status, listed, schema: media.schema, examples: media.examples })
      }
    }
  }
  return found
}

/** The status an Error example stands for: its code's, or the parser's 408, 414 and 431. */
const statusOfCode = (body: Obj) =>
  body.code === 'invalid_request' && [408, 414, 431].includes(Number(body.status))
    ? Number(body.status)
    : errorStatus[body.code as ErrorCode]

describe('named examples of the responses', () => {
  test('each response of each operation has its own, valid, with code and status agreeing', async (t) => {
    const { doc } = await served(t)
    const compile = createValidatorCompiler()
    let errors = 0
    for (const { where, status, listed, schema, examples } of responsesOf(doc)) {
      const validate = compile({
        schema: inline(doc, schema),
        httpPart: 'body',
        method: 'POST',
        url: '/',
      })
      assert.ok(Object.keys(examples).length > 0, `${where}: no example`)
      for (const [name, example] of Object.entries(examples)) {
        const { summary, value } = example as Obj
        assert.equal(typeof summary, 'string', `${where} ${name}: summary`)
        assert.ok(validate(asBody(value)), `${where} ${name}: ${JSON.stringify(validate.errors)}`)
        if (status.startsWith('2')) continue
        const body = value as Obj
        errors++
        assert.equal(statusOfCode(body), body.status, `${where} ${name}: code ${body.code}`)
        if (status === 'default') {
          // `default` stands for the statuses the operation does not list.
          assert.ok(
            !listed.includes(String(body.status)),
            `${where} ${name}: ${body.status} is listed`,
          )
        } else {
          assert.equal(body.status, Number(status), `${where} ${name}: status`)
        }
      }
    }
    assert.ok(errors >= 30, `${errors} Error examples`)
  })

  test('the service answers the Error examples word for word', async (t) => {
    const { app, doc } = await served(t)
    const example = (path: string, method: string, status: string, name: string) =>
      at(
        doc,
        `/paths/${pointerKey(path)}/${method}/responses/${status}/content/application~1json/examples/${name}`,
      ).value
    const post = (payload: string, headers: Obj = {}) =>
      app.call({
        method: 'POST',
        url: '/v1/pets',
        headers: { 'content-type': 'application/json', ...headers } as never,
        payload,
      })
    const cases: [
      string,
      string,
      string,
      string,
      () => Promise<{ statusCode: number; body: string }>,
    ][] = [
      [
        '/pets/{petId}',
        'get',
        '404',
        'noSuchPet',
        () => app.call({ method: 'GET', url: '/v1/pets/1' }),
      ],
      [
        '/pets',
        'get',
        '400',
        'invalidLimit',
        () => app.call({ method: 'GET', url: '/v1/pets?limit=0' }),
      ],
      [
        '/pets',
        'get',
        '400',
        'invalidCursor',
        () => app.call({ method: 'GET', url: '/v1/pets?cursor=x' }),
      ],
      [
        '/pets',
        'get',
        '401',
        'missingKey',
        () => app.app.inject({ method: 'GET', url: '/v1/pets' }),
      ],
      [
        '/pets',
        'get',
        '401',
        'invalidKey',
        () =>
          app.app.inject({
            method: 'GET',
            url: '/v1/pets',
            headers: { authorization: 'Bearer nope' },
          }),
      ],
      ['/pets', 'post', '400', 'missingField', () => post('{"name":"Rex"}')],
      ['/pets', 'post', '400', 'emptyBody', () => post('')],
      ['/pets', 'post', '413', 'tooLarge', () => post(`"${'x'.repeat(70_000)}"`)],
      ['/pets', 'post', '415', 'notJson', () => post('Rex', { 'content-type': 'text/plain' })],
      [
        '/pets',
        'post',
        '422',
        'keyReused',
        async () => {
          await post('{"name":"Rex","categoryId":1}', { 'idempotency-key': 'k1' })
          return post('{"name":"Max","categoryId":1}', { 'idempotency-key': 'k1' })
        },
      ],
      [
        '/pets/{petId}',
        'get',
        '400',
        'invalidPetId',
        () => app.call({ method: 'GET', url: '/v1/pets/abc' }),
      ],
      [
        '/store/orders',
        'get',
        '400',
        'invalidHost',
        () => app.call({ method: 'GET', url: '/v1/store/orders', headers: { host: 'a b' } }),
      ],
      [
        '/store/orders',
        'get',
        '501',
        'notImplemented',
        () => app.call({ method: 'GET', url: '/v1/store/orders' }),
      ],
      [
        '/pets',
        'get',
        'default',
        'methodNotAllowed',
        () => app.call({ method: 'DELETE', url: '/v1/pets' }),
      ],
      [
        '/pets/{petId}',
        'get',
        'default',
        'methodNotAllowed',
        () => app.call({ method: 'DELETE', url: '/v1/pets/1' }),
      ],
      [
        '/store/orders',
        'get',
        'default',
        'methodNotAllowed',
        () => app.call({ method: 'DELETE', url: '/v1/store/orders' }),
      ],
    ]
    for (const [path, method, status, name, request] of cases) {
      const res = await request()
      const expected = example(path, method, status, name) as Obj
      assert.equal(res.statusCode, expected.status, `${path} ${status} ${name}`)
      assert.deepEqual(json(res as never), expected, `${path} ${status} ${name}`)
    }

    // Rate limits and the sunset, each on an app set up for it.
    const limited = await testApp(t, { config: { rateLimitMax: 1, authFailureLimitMax: 1 } })
    await limited.call({ method: 'GET', url: '/v1/pets' })
    const overBudget = await limited.call({ method: 'GET', url: '/v1/pets' })
    assert.deepEqual(json(overBudget), example('/pets', 'get', '429', 'keyBudget'))
    await limited.app.inject({ method: 'GET', url: '/v1/pets' })
    const overFailures = await limited.app.inject({ method: 'GET', url: '/v1/pets' })
    assert.deepEqual(json(overFailures), example('/pets', 'get', '429', 'failedAuthentications'))
    const late = await testApp(t, { now: new Date('2030-12-06T00:00:00Z') })
    const gone = await late.call({ method: 'GET', url: '/v1/pets/1' })
    assert.deepEqual(json(gone), example('/pets/{petId}', 'get', '410', 'pastSunset'))
  })
})

// ---------------------------------------------------------------------------------------------
// The `name` patterns

const OLD = /[^\p{White_Space}]/u
const WHITE_SPACE = /\p{White_Space}/u
const withFlag = new RegExp(NOT_ONLY_WHITE_SPACE, 'u')
const withoutFlag = new RegExp(NOT_ONLY_WHITE_SPACE)
const storableWithFlag = new RegExp(WITHOUT_U0000, 'u')
const storableWithoutFlag = new RegExp(WITHOUT_U0000)

/** Every code point that is White_Space, by Node's Unicode tables. */
function whiteSpaceCodePoints(): number[] {
  const found: number[] = []
  for (let cp = 0; cp <= 0x10ffff; cp++) {
    if (WHITE_SPACE.test(String.fromCodePoint(cp))) found.push(cp)
  }
  return found
}

storeIndependent(() => {
  describe('the name patterns', () => {
    test('the written-out class is exactly Unicode White_Space, over all code points', () => {
      const listed = [
        ...[0x9, 0xa, 0xb, 0xc, 0xd, 0x20, 0x85, 0xa0, 0x1680],
        ...Array.from({ length: 11 }, (_, i) => 0x2000 + i),
        ...[0x2028, 0x2029, 0x202f, 0x205f, 0x3000],
      ]
      assert.deepEqual(whiteSpaceCodePoints(), listed)
      const notInClass = (cp: number) => withFlag.test(String.fromCodePoint(cp))
      assert.deepEqual(
        listed.filter(notInClass),
        [],
        'every White_Space code point is in the class',
      )
    })

    test('old regex, new pattern with and without `u`: the same over the BMP and astral samples', () => {
      const astral = [0x10000, 0x1f408, 0x1f600, 0x2070e, 0xe0020, 0xe007f, 0xfffff, 0x10ffff]
      const codePoints = [...Array.from({ length: 0x10000 }, (_, i) => i), ...astral]
      let refused = 0
      for (const cp of codePoints) {
        const c = String.fromCodePoint(cp)
        for (const s of [c, `${c}${c}${c}`, ` ${c}\u3000`, `${c}\u0000`]) {
          const expected = OLD.test(s)
          assert.equal(
            withFlag.test(s),
            expected,
            `U+${cp.toString(16)} in ${JSON.stringify(s)}, u`,
          )
          assert.equal(
            withoutFlag.test(s),
            expected,
            `U+${cp.toString(16)} in ${JSON.stringify(s)}`,
          )
          const storable = !s.includes('\u0000')
          assert.equal(storableWithFlag.test(s), storable, `U+${cp.toString(16)} U+0000 rule, u`)
          assert.equal(storableWithoutFlag.test(s), storable, `U+${cp.toString(16)} U+0000 rule`)
        }
        if (!OLD.test(c)) refused++
      }
      assert.equal(refused, 25, 'only the 25 White_Space code points are refused alone')
      // What the `\p` class meant to an engine without Unicode mode: "p" refused, spaces accepted.
      assert.equal(/[^p{White_Space}]/.test('p'), false)
      assert.equal(withoutFlag.test('p'), true)
      assert.equal(withoutFlag.test('   '), false)
    })

    test('the service answers names of each White_Space character as before', async (t) => {
      const app = await testApp(t)
      const blank = "field 'name' must contain a character that is not white space"
      const post = (name: string) =>
        app.call({
          method: 'POST',
          url: '/v1/pets',
          headers: { 'content-type': 'application/json' },
          payload: JSON.stringify({ name, categoryId: 1 }),
        })
      let id = 0
      for (const cp of whiteSpaceCodePoints()) {
        const c = String.fromCodePoint(cp)
        for (const name of [c, c.repeat(255), `${c} \t`]) {
          const res = await post(name)
          assert.equal(res.statusCode, 400, `U+${cp.toString(16)}`)
          assert.deepEqual(json(res), { code: 'invalid_request', message: blank, status: 400 })
        }
        const res = await post(`${c}x${c}`)
        assert.equal(res.statusCode, 201, `x between U+${cp.toString(16)}`)
        assert.deepEqual(json(res), { id: ++id, name: `${c}x${c}`, categoryId: 1 })
      }
      // Invisible characters that are not White_Space, and astral ones, make a name on their own.
      for (const name of ['\u180e', '\u200b', '\u2060', '\ufeff', 'p', '🐈', '\u3000🐈']) {
        const res = await post(name)
        assert.equal(res.statusCode, 201, JSON.stringify(name))
        assert.deepEqual(json(res), { id: ++id, name, categoryId: 1 })
      }
      // U+0000 is refused with its own message, after the length and white space rules.
      const nul = "field 'name' must not contain the character U+0000"
      for (const [name, message] of [
        ['a\u0000b', nul],
        ['\u0000', nul],
        [' \u0000 ', nul],
        ['\u0000'.repeat(256), "field 'name' must be 1 to 255 characters long"],
      ] as const) {
        const res = await post(name)
        assert.equal(res.statusCode, 400, JSON.stringify(name))
        assert.deepEqual(json(res), { code: 'invalid_request', message, status: 400 })
      }
    })
  })
})
