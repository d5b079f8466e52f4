// The document as API developers' tools read it: Prism mocks consistent answers from it, and
// Postman's importer (openapi-to-postmanv2) makes a collection that newman runs against the
// service with every request answered as expected, the list starting at the first pet.
import assert from 'node:assert/strict'
import { writeFileSync } from 'node:fs'
import { join } from 'node:path'
import { type TestContext, test } from 'node:test'
import { fileURLToPath } from 'node:url'
import { promisify } from 'node:util'
import newman, { type NewmanRunSummary } from 'newman'
import converter from 'openapi-to-postmanv2'
import { type ErrorCode, errorStatus } from '../../src/errors.js'
import { json, tempDir, testApp } from '../support/app.js'
import { freePort, spawnService } from '../support/process.js'
import { storeIndependent } from '../support/stores.js'

type Obj = Record<string, unknown>

const ROOT = fileURLToPath(new URL('../..', import.meta.url))

async function servedDocument(t: TestContext): Promise<{ text: string; doc: Obj }> {
  const app = await testApp(t)
  const res = await app.app.inject({ method: 'GET', url: '/v1/openapi.json' })
  assert.equal(res.statusCode, 200)
  return { text: res.body, doc: json(res) as Obj }
}

/** Prism's mock server on the document, on a free loopback port; stopped after `t`. */
async function prismMock(t: TestContext, documentText: string): Promise<string> {
  const file = join(tempDir(t), 'openapi.json')
  writeFileSync(file, documentText)
  const port = await freePort()
  const prism = spawnService(t, {
    command: join(ROOT, 'node_modules', '.bin', 'prism'),
    args: ['mock', '--host', '127.0.0.1', '--port', String(port), file],
  })
  await prism.waitFor(/Prism is listening/)
  return `http://127.0.0.1:${port}`
}

/** The status an Error body stands for: its code's, or the parser's 408, 414 and 431. */
const statusOfCode = (body: Obj) =>
  body.code === 'invalid_request' && [408, 414, 431].includes(Number(body.status))
    ? Number(body.status)
    : errorStatus[body.code as ErrorCode]

/** A request Prism takes as valid for each operation, so that it answers the preferred example. */
const requests: Record<string, { path: string; init: RequestInit }> = {
  listPets: { path: '/pets', init: {} },
  createPet: {
    path: '/pets',
    init: {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: '{"name":"Rex","categoryId":12}',
    },
  },
  getPet: { path: '/pets/1', init: {} },
  listOrders: { path: '/store/orders', init: {} },
}

storeIndependent(() => {
  test('Prism mocks each named example of each response with status, code and body agreeing', async (t) => {
    const { text, doc } = await servedDocument(t)
    const mock = await prismMock(t, text)
    let answered = 0
    for (const methods of Object.values(doc.paths as Obj)) {
      for (const op of Object.values(methods as Obj) as Obj[]) {
        const { path, init } = requests[String(op.operationId)]!
        for (const [status, response] of Object.entries(op.responses as Obj)) {
          const media = ((response as Obj).content as Obj)['application/json'] as Obj
          for (const [name, example] of Object.entries(media.examples as Obj)) {
            const value = (example as Obj).value as Obj
            const code = status === 'default' ? String(value.status) : status
            const res = await fetch(`${mock}${path}`, {
              ...init,
              headers: {
                ...(init.headers as Obj),
                authorization: 'Bearer any',
                prefer: `code=${code}, example=${name}`,
              } as never,
            })
            const where = `${op.operationId} ${status} ${name}`
            assert.equal(res.status, Number(code), where)
            const body = (await res.json()) as Obj
            assert.deepEqual(body, value, where)
            if (res.status >= 400) {
              assert.equal(body.status, res.status, `${where}: status`)
              assert.equal(statusOfCode(body), res.status, `${where}: code ${body.code}`)
            }
            answered++
          }
        }
      }
    }
    assert.ok(answered >= 40, `${answered} answers`)
    // Without a preference, an error status gets that status's own first example.
    const unauthorized = await fetch(`${mock}/pets`, {
      headers: { authorization: 'Bearer any', prefer: 'code=401' },
    })
    assert.deepEqual(await unauthorized.json(), {
      code: 'unauthorized',
      message: 'an API key is required: send Authorization: Bearer <key>',
      status: 401,
    })
  })

  test("openapi-to-postmanv2's collection, run by newman, passes from the first pet", async (t) => {
    const { text } = await servedDocument(t)
    const app = await testApp(t)
    // The pet the list must start with.
    const first = await app.call({
      method: 'POST',
      url: '/v1/pets',
      headers: { 'content-type': 'application/json' },
      payload: '{"name":"Tom","categoryId":3,"status":"available"}',
    })
    assert.equal(first.statusCode, 201)
    await app.app.listen({ port: 0, host: '127.0.0.1' })
    const { port } = app.app.server.address() as { port: number }

    const imports: { parametersResolution: 'Example'; enableOptionalParameters?: boolean }[] = [
      // Postman's import with parameters from the examples: every optional parameter is on.
      { parametersResolution: 'Example' },
      { parametersResolution: 'Example', enableOptionalParameters: false },
    ]
    for (const options of imports) {
      const converted = await promisify(converter.convertV2)(
        { type: 'string', data: text },
        options,
      )
      assert.ok(converted?.result, converted?.reason)
      const collection = converted.output![0]!.data as unknown as Obj
      const cursor = findQuery(collection, 'List all animals', 'cursor')
      assert.equal(cursor.disabled, options.enableOptionalParameters === false, 'cursor switched')
      const summary = await run(collection, `http://127.0.0.1:${port}/v1`, app.key)
      const answers = summary.run.executions.map((e) => [e.item.name, e.response?.code])
      assert.deepEqual(answers, [
        ['List all animals', 200],
        ['Add an animal', 201],
        ['Get an animal', 200],
        ['List store orders', 501],
      ])
      assert.deepEqual(summary.run.failures, [])
      const list = JSON.parse(summary.run.executions[0]!.response!.stream!.toString()) as Obj[]
      assert.deepEqual(list[0], { id: 1, name: 'Tom', categoryId: 3, status: 'available' })
    }
  })
})

/** The query parameter `key` of the request named `name`, anywhere in the collection. */
function findQuery(collection: Obj, name: string, key: string): Obj {
  const items = (collection.item as Obj[]).flatMap(function flat(i: Obj): Obj[] {
    return Array.isArray(i.item) ? (i.item as Obj[]).flatMap(flat) : [i]
  })
  const item = items.find((i) => i.name === name)
  assert.ok(item, `${name} is in the collection`)
  const query = ((item.request as Obj).url as Obj).query as Obj[]
  const found = query.find((q) => q.key === key)
  assert.ok(found, `${name} has ${key}`)
  return found
}

function run(collection: Obj, baseUrl: string, key: string): Promise<NewmanRunSummary> {
  return new Promise((resolve, reject) => {
    newman.run(
      {
        collection: collection as never,
        envVar: [
          { key: 'baseUrl', value: baseUrl },
          { key: 'bearerToken', value: key },
        ],
        reporters: [],
        timeoutRequest: 10_000,
      },
      (err, summary) => (err ? reject(err) : resolve(summary)),
    )
  })
}
