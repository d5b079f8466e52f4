// The TypeScript client (client/): its generated types match the app as it is now, the example
// program runs against a real service, and int64 values, paging, errors and idempotency work
// through it over a real socket.
import assert from 'node:assert/strict'
import { readFileSync } from 'node:fs'
import { join } from 'node:path'
import { describe, type TestContext, test } from 'node:test'
import { fileURLToPath } from 'node:url'
import type { OpenAPI3 } from 'openapi-typescript'
import {
  createPetstoreClient,
  nextLink,
  type Pet,
  type PetStatus,
  PetstoreError,
  parseExactJson,
  retryAfterMs,
  stringifyExactJson,
} from '../../client/index.js'
import {
  generateSchema,
  int64PropertyNames,
  SCHEMA_PATH,
  servedDocument,
} from '../../scripts/generate-client.js'
import { INVALID_TOKEN } from '../support/errors.js'
import { spawnService, startService } from '../support/process.js'
import { storeIndependent } from '../support/stores.js'
import type { RunResult } from '../support/workspace.js'

const ROOT = fileURLToPath(new URL('../..', import.meta.url))
const EXAMPLE = join(ROOT, 'examples', 'pets-client.ts')
const API_KEY = 'client-test-key-0123456789'
const INT64_MAX = 9223372036854775807n
const INT64_MIN = -9223372036854775808n

/** `petstore serve` on a fresh database and a free port; returns the API root, `.../v1`. */
async function serveApi(t: TestContext): Promise<string> {
  const service = await startService(t, {
    env: { PETSTORE_API_KEYS: API_KEY, PETSTORE_LOG_LEVEL: 'warn' },
  })
  return `${service.origin}/v1`
}

/** The example program, run with only `env` set, to its end. */
async function runExample(t: TestContext, env: Record<string, string>): Promise<RunResult> {
  const example = spawnService(t, {
    command: process.execPath,
    args: ['--import', 'tsx', EXAMPLE],
    cwd: ROOT,
    env,
    // Only a stop for a hung example: tsx compiles it, which takes long on a loaded machine.
    timeout: 5 * 60_000,
  })
  return { ...(await example.exited), stdout: example.stdout(), stderr: example.stderr() }
}

/** A fetch that records what the client sends: method, URL and body text. */
function recordingFetch() {
  const sent: { method: string; url: string; body: string }[] = []
  const fetchAndRecord = async (request: Request): Promise<Response> => {
    sent.push({ method: request.method, url: request.url, body: await request.clone().text() })
    return fetch(request)
  }
  return { sent, fetch: fetchAndRecord }
}

storeIndependent(() => {
  describe('generated types', () => {
    test('client/schema.ts is what the generator makes from the current app', async () => {
      const committed = readFileSync(SCHEMA_PATH, 'utf8')
      const generated = await generateSchema()
      if (committed !== generated) {
        const a = committed.split('\n')
        const b = generated.split('\n')
        const differs = a.findIndex((l, i) => l !== b[i])
        const line = differs === -1 ? a.length : differs
        assert.fail(
          `client/schema.ts is out of date with the OpenAPI document: run \`npm run client:generate\`` +
            ` and commit the result.\nFirst difference at line ${line + 1}:\n` +
            `  committed: ${JSON.stringify(a[line])}\n  generated: ${JSON.stringify(b[line])}`,
        )
      }
    })

    test('the int64 properties are exactly id and categoryId, and bigint in the types', async () => {
      assert.deepEqual(int64PropertyNames(await servedDocument()), ['categoryId', 'id'])
      const schema = readFileSync(SCHEMA_PATH, 'utf8')
      assert.match(schema, /^ {6}id: bigint$/m)
      assert.match(schema, /^ {6}categoryId: bigint$/m)
      assert.match(schema, /^ {8}petId: bigint$/m)
      assert.match(schema, /^export const int64Properties = \['categoryId', 'id'\] as const$/m)
    })

    test('the generator refuses an int64 the decoding rule cannot reach', () => {
      const doc = (schemas: Record<string, unknown>) =>
        ({
          openapi: '3.1.0',
          info: { title: 't', version: '1' },
          components: { schemas },
        }) as OpenAPI3
      const int64 = { type: 'integer', format: 'int64' }
      assert.throws(() => int64PropertyNames(doc({ Ids: { type: 'array', items: int64 } })), {
        message:
          '#/components/schemas/Ids/items: the client decodes int64 only in object properties',
      })
      assert.throws(
        () =>
          int64PropertyNames(
            doc({
              A: { type: 'object', properties: { id: int64 } },
              B: { type: 'object', properties: { id: { type: 'string' } } },
            }),
          ),
        { message: 'properties both int64 and not: id' },
      )
      assert.throws(
        () =>
          int64PropertyNames(
            doc({ A: { type: 'object', properties: { n: { type: 'string', format: 'int64' } } } }),
          ),
        { message: '#/components/schemas/A/properties/n: int64 must be a plain "type": "integer"' },
      )
    })
  })

  describe('exact JSON', () => {
    test('id and categoryId decode as BigInt with every digit; other numbers as numbers', () => {
      assert.deepEqual(
        parseExactJson(
          '[{"id":9007199254740993,"name":"n","categoryId":-9223372036854775808},{"status":401}]',
        ),
        [{ id: 9007199254740993n, name: 'n', categoryId: INT64_MIN }, { status: 401 }],
      )
    })

    test('a number that would lose digits is an error, never a rounded value', () => {
      assert.throws(() => parseExactJson('{"status":9007199254740993}'), {
        message:
          "Cannot safely convert to number: the value '9007199254740993' would truncate and become 9007199254740992",
      })
      assert.throws(() => parseExactJson('{"id":1.5}'), {
        name: 'SyntaxError',
        message: '"id" is not a 64-bit integer: 1.5',
      })
      assert.throws(() => parseExactJson('{"categoryId":9223372036854775808}'), {
        name: 'SyntaxError',
        message: '"categoryId" is not a 64-bit integer: 9223372036854775808',
      })
    })

    test('error bodies are decoded by the same rule; a body that is not JSON stays text', async () => {
      const answers = [
        new Response('{"code":"not_found","message":"m","status":404,"id":9223372036854775807}', {
          status: 404,
          headers: { 'content-type': 'application/json' },
        }),
        new Response('<html>bad gateway</html>', { status: 502 }),
      ]
      const client = createPetstoreClient({
        baseUrl: 'http://petstore.invalid/v1',
        apiKey: API_KEY,
        fetch: async () => answers.shift()!,
      })
      const notFound = await client.api.GET('/pets/{petId}', { params: { path: { petId: 1n } } })
      assert.deepEqual(notFound.error, {
        code: 'not_found',
        message: 'm',
        status: 404,
        id: INT64_MAX,
      })
      const badGateway = await client.api.GET('/pets')
      assert.equal(badGateway.response.status, 502)
      assert.equal(badGateway.error, '<html>bad gateway</html>')
      const err = new PetstoreError(badGateway.response, badGateway.error)
      assert.deepEqual([err.message, err.status, err.body], ['HTTP 502', 502, undefined])
    })

    test('a BigInt is written as an integer literal with all its digits', () => {
      assert.equal(
        stringifyExactJson({ name: 'Max', categoryId: INT64_MAX, status: 'sold' }),
        '{"name":"Max","categoryId":9223372036854775807,"status":"sold"}',
      )
    })

    test('nextLink finds rel="next" among the links of a Link header', () => {
      assert.equal(nextLink(null), null)
      assert.equal(nextLink('</v1/pets>; rel="successor-version"'), null)
      assert.equal(
        nextLink('<https://h/v1/pets?limit=2&cursor=abc>; rel="next"'),
        'https://h/v1/pets?limit=2&cursor=abc',
      )
      assert.equal(nextLink('</a>; rel="prev", </b>; title="x"; rel=next'), '/b')
      assert.equal(nextLink('</a>; rel="prev next"'), '/a')
    })
  })

  describe('paging through 429 and 503', () => {
    const RATE_LIMITED = '{"code":"rate_limited","message":"too many requests","status":429}'
    const page = (ids: number[], next: string | null) =>
      new Response(JSON.stringify(ids.map((id) => ({ id, name: `pet ${id}`, categoryId: 1 }))), {
        status: 200,
        headers: {
          'content-type': 'application/json',
          ...(next === null ? {} : { link: `</v1/pets?limit=2&cursor=${next}>; rel="next"` }),
        },
      })
    const refusal = (status: number, retryAfter: string | null) =>
      new Response(RATE_LIMITED.replace('429', String(status)), {
        status,
        headers: {
          'content-type': 'application/json',
          ...(retryAfter === null ? {} : { 'retry-after': retryAfter }),
        },
      })

    /** A client answered by `answers` in turn, recording the URLs asked and the waits made. */
    function scripted(
      answers: Response[],
      retry?: { maxWaitSeconds?: number; maxRetries?: number },
    ) {
      const urls: string[] = []
      const waits: number[] = []
      const client = createPetstoreClient({
        baseUrl: 'http://petstore.invalid/v1',
        apiKey: API_KEY,
        fetch: async (request) => {
          urls.push(new URL(request.url).search)
          return answers.shift()!
        },
        retry: {
          ...retry,
          sleep: async (ms) => {
            waits.push(ms)
          },
        },
      })
      const all = async () => {
        const ids: bigint[] = []
        for await (const pet of client.listAllPets({ limit: 2 })) ids.push(pet.id)
        return ids
      }
      return { urls, waits, all }
    }

    test('a page answered 429 or 503 with Retry-After is asked for again after that wait', async () => {
      const { urls, waits, all } = scripted([
        page([1, 2], 'c1'),
        refusal(429, '2'),
        refusal(503, '1'),
        page([3, 4], 'c2'),
        refusal(429, '0'),
        page([5], null),
      ])
      assert.deepEqual(await all(), [1n, 2n, 3n, 4n, 5n])
      assert.deepEqual(waits, [2000, 1000, 0])
      assert.deepEqual(urls, [
        '?limit=2',
        '?limit=2&cursor=c1',
        '?limit=2&cursor=c1',
        '?limit=2&cursor=c1',
        '?limit=2&cursor=c2',
        '?limit=2&cursor=c2',
      ])
    })

    test('a Retry-After given as an HTTP date is waited out until that date', () => {
      const now = Date.parse('2026-11-28T12:00:00Z')
      assert.equal(retryAfterMs('Sat, 28 Nov 2026 12:00:30 GMT', now), 30_000)
      assert.equal(retryAfterMs('Sat, 28 Nov 2026 11:59:00 GMT', now), 0)
      assert.equal(retryAfterMs(' 7 ', now), 7000)
      assert.equal(retryAfterMs('soon', now), null)
      assert.equal(retryAfterMs('-1', now), null)
      assert.equal(retryAfterMs(null, now), null)
    })

    test('past the longest wait, the retries of one page, or without Retry-After, the 429 is thrown', async () => {
      const thrown = async (run: () => Promise<unknown>) => {
        const err = await run().then(
          () => assert.fail('no error'),
          (e: unknown) => e,
        )
        assert.ok(err instanceof PetstoreError)
        return [err.status, err.message]
      }
      const tooLong = scripted([refusal(429, '61')])
      assert.deepEqual(await thrown(tooLong.all), [429, '429 rate_limited: too many requests'])
      assert.deepEqual(tooLong.waits, [])

      const capped = scripted([refusal(429, '10'), refusal(429, '10'), refusal(429, '10')], {
        maxWaitSeconds: 10,
        maxRetries: 2,
      })
      assert.deepEqual(await thrown(capped.all), [429, '429 rate_limited: too many requests'])
      assert.deepEqual(capped.waits, [10_000, 10_000])

      const bare = scripted([refusal(429, null)])
      assert.deepEqual(await thrown(bare.all), [429, '429 rate_limited: too many requests'])
      const otherError = scripted([refusal(500, '1')])
      assert.deepEqual(await thrown(otherError.all), [500, '500 rate_limited: too many requests'])
      assert.deepEqual([bare.waits, otherError.waits], [[], []])
    })

    test('with retry: false the first 429 is thrown', async () => {
      const client = createPetstoreClient({
        baseUrl: 'http://petstore.invalid/v1',
        apiKey: API_KEY,
        fetch: async () => refusal(429, '1'),
        retry: false,
      })
      await assert.rejects(
        async () => {
          for await (const _ of client.listAllPets()) assert.fail('no pet')
        },
        { name: 'PetstoreError', status: 429 },
      )
    })
  })

  describe('example program', () => {
    test('lists, creates and pages through pets against a running service', async (t) => {
      const baseUrl = await serveApi(t)
      const res = await runExample(t, { PETSTORE_URL: baseUrl, PETSTORE_KEY: API_KEY })
      assert.equal(res.stderr, '')
      assert.deepEqual({ code: res.code, signal: res.signal }, { code: 0, signal: null })
      assert.equal(
        res.stdout,
        [
          'first page: 0 pets',
          'created #1 Rex (category 1, available) at /v1/pets/1',
          'created #2 Luna (category 9223372036854775807, pending) at /v1/pets/2',
          'created #3 Milo (category -9223372036854775808, sold) at /v1/pets/3',
          'created #4 Bella (category 2, no status) at /v1/pets/4',
          'created #5 Max (category 3, available) at /v1/pets/5',
          'all pets, 100 per page:',
          '  #1 Rex (category 1, available)',
          '  #2 Luna (category 9223372036854775807, pending)',
          '  #3 Milo (category -9223372036854775808, sold)',
          '  #4 Bella (category 2, no status)',
          '  #5 Max (category 3, available)',
          'available pets:',
          '  #1 Rex (category 1, available)',
          '  #5 Max (category 3, available)',
          '',
        ].join('\n'),
      )
    })

    test('a rejected key ends it with exit code 1 and the error on stderr', async (t) => {
      const baseUrl = await serveApi(t)
      const res = await runExample(t, {
        PETSTORE_URL: baseUrl,
        PETSTORE_KEY: 'not-a-valid-key-at-all',
      })
      assert.deepEqual(res, {
        stdout: '',
        stderr:
          'pets-client: 401 unauthorized: the API key is not valid (unknown, revoked or expired)\n',
        code: 1,
        signal: null,
      })
    })

    test('without PETSTORE_URL and PETSTORE_KEY it prints its usage and exits 2', async (t) => {
      const res = await runExample(t, {})
      assert.deepEqual(res, {
        stdout: '',
        stderr:
          'usage: PETSTORE_URL=<API root, e.g. http://127.0.0.1:8080/v1> PETSTORE_KEY=<API key>\n' +
          '         node --import tsx examples/pets-client.ts\n',
        code: 2,
        signal: null,
      })
    })
  })

  describe('client against a running service', () => {
    test('int64 extremes go out with every digit and come back as equal BigInts', async (t) => {
      const baseUrl = await serveApi(t)
      const recorder = recordingFetch()
      const client = createPetstoreClient({ baseUrl, apiKey: API_KEY, fetch: recorder.fetch })

      const max = await client.api.POST('/pets', { body: { name: 'Max', categoryId: INT64_MAX } })
      const min = await client.api.POST('/pets', {
        body: { name: 'Min', categoryId: INT64_MIN, status: 'sold' },
      })
      assert.equal(max.response.status, 201)
      assert.equal(min.response.status, 201)
      const expected: Pet[] = [
        { id: 1n, name: 'Max', categoryId: INT64_MAX },
        { id: 2n, name: 'Min', categoryId: INT64_MIN, status: 'sold' },
      ]
      assert.deepEqual([max.data, min.data], expected)
      assert.deepEqual(
        recorder.sent.map((r) => r.body),
        [
          '{"name":"Max","categoryId":9223372036854775807}',
          '{"name":"Min","categoryId":-9223372036854775808,"status":"sold"}',
        ],
      )

      const got = await client.api.GET('/pets/{petId}', { params: { path: { petId: 2n } } })
      assert.equal(got.response.status, 200)
      assert.deepEqual(got.data, expected[1])
      assert.equal(recorder.sent.at(-1)!.url, `${baseUrl}/pets/2`)

      const list = await client.api.GET('/pets')
      assert.deepEqual(list.data, expected)
      const categoryId: bigint = list.data![0]!.categoryId
      assert.equal(categoryId, 9223372036854775807n)
    })

    test('the iterator follows rel="next" through every page, each pet once', async (t) => {
      const baseUrl = await serveApi(t)
      const recorder = recordingFetch()
      const client = createPetstoreClient({ baseUrl, apiKey: API_KEY, fetch: recorder.fetch })
      const statuses: PetStatus[] = ['available', 'pending', 'sold']
      const expected: Pet[] = []
      for (let i = 1; i <= 45; i++) {
        const body = {
          name: `pet ${i}`,
          categoryId: BigInt(i) * 1_000_000_000_007n,
          status: statuses[i % 3]!,
        }
        const created = await client.api.POST('/pets', { body })
        assert.equal(created.response.status, 201)
        expected.push({ id: BigInt(i), ...body })
      }
      recorder.sent.length = 0

      const all: Pet[] = []
      for await (const pet of client.listAllPets({ limit: 10 })) all.push(pet)
      assert.deepEqual(all, expected)
      const urls = recorder.sent.map((r) => new URL(r.url))
      assert.deepEqual(
        urls.map((u) => [u.pathname, u.searchParams.get('limit'), u.searchParams.has('cursor')]),
        [
          ['/v1/pets', '10', false],
          ['/v1/pets', '10', true],
          ['/v1/pets', '10', true],
          ['/v1/pets', '10', true],
          ['/v1/pets', '10', true],
        ],
      )

      const sold: Pet[] = []
      for await (const pet of client.listAllPets({ status: 'sold', limit: 4 })) sold.push(pet)
      assert.deepEqual(
        sold,
        expected.filter((p) => p.status === 'sold'),
      )
      assert.equal(sold.length, 15)
    })

    test('a rejected key surfaces the typed Error body', async (t) => {
      const baseUrl = await serveApi(t)
      const client = createPetstoreClient({ baseUrl, apiKey: 'not-a-valid-key-at-all' })

      const { data, error, response } = await client.api.GET('/pets')
      assert.equal(data, undefined)
      assert.equal(response.status, 401)
      assert.equal(
        response.headers.get('www-authenticate'),
        'Bearer realm="petstore", error="invalid_token"',
      )
      assert.deepEqual(error, INVALID_TOKEN)
      const code: string | undefined = error?.code
      assert.equal(code, 'unauthorized')

      await assert.rejects(
        async () => {
          for await (const _ of client.listAllPets()) assert.fail('no pet can be listed')
        },
        (err: unknown) => {
          assert.ok(err instanceof PetstoreError)
          assert.equal(err.status, 401)
          assert.deepEqual(err.body, INVALID_TOKEN)
          assert.equal(
            err.message,
            '401 unauthorized: the API key is not valid (unknown, revoked or expired)',
          )
          return true
        },
      )
    })

    test('an Idempotency-Key replay returns the same pet; another body under it is refused', async (t) => {
      const baseUrl = await serveApi(t)
      const client = createPetstoreClient({ baseUrl, apiKey: API_KEY })
      const body = { name: 'Once', categoryId: INT64_MAX, status: 'pending' } as const
      const header = { 'Idempotency-Key': 'order-42' }

      const first = await client.api.POST('/pets', { body, params: { header } })
      const replay = await client.api.POST('/pets', { body, params: { header } })
      const pet: Pet = { id: 1n, ...body }
      assert.deepEqual([first.response.status, first.data], [201, pet])
      assert.equal(first.response.headers.get('idempotent-replayed'), null)
      assert.deepEqual([replay.response.status, replay.data], [201, pet])
      assert.equal(replay.response.headers.get('idempotent-replayed'), 'true')
      assert.equal(replay.response.headers.get('location'), '/v1/pets/1')

      const other = await client.api.POST('/pets', {
        body: { ...body, name: 'Twice' },
        params: { header },
      })
      assert.equal(other.response.status, 422)
      assert.deepEqual(other.error, {
        code: 'idempotency_key_reused',
        message: 'Idempotency-Key was already used with a different request body',
        status: 422,
      })
      const list = await client.api.GET('/pets')
      assert.deepEqual(list.data, [pet])
    })
  })
})
