// HTTP at the edge, on a real socket: what a request must be before the service reads it, how
// long it may take to arrive, and answers that must reach a client still sending its body.
import assert from 'node:assert/strict'
import type { AddressInfo } from 'node:net'
import { describe, type TestContext, test } from 'node:test'
import type { Config } from '../../src/config.js'
import { type TestApp, testApp } from '../support/app.js'
import { exchange, header, type RawAnswer, rawRequest } from '../support/raw-http.js'

async function served(t: TestContext, config: Partial<Config> = {}) {
  const a = await testApp(t, { config })
  await a.app.listen({ port: 0, host: '127.0.0.1' })
  return { a, port: (a.app.server.address() as AddressInfo).port }
}

const HOST: [string, string] = ['Host', 'petstore.test']
const JSON_TYPE: [string, string] = ['Content-Type', 'application/json']
const bearer = (key: string): [string, string] => ['Authorization', `Bearer ${key}`]
const PET = '{"name":"Rex","categoryId":1}'

async function one(port: number, bytes: string | Buffer): Promise<RawAnswer> {
  const x = await exchange(port, bytes)
  assert.equal(x.answers.length, 1, `no answer: ${x.error ?? ''} ${x.rest}`)
  return x.answers[0]!
}

function assertError(answer: RawAnswer, status: number, code: string, message: string) {
  assert.equal(answer.status, status)
  assert.deepEqual(JSON.parse(answer.body), { code, message, status })
  assert.equal(header(answer, 'content-type'), 'application/json; charset=utf-8')
  assert.match(header(answer, 'x-request-id') ?? '', /^[0-9a-f-]{36}$/)
}

/** The head of a create announcing a body of `length` bytes, with the given Authorization, if any. */
function createHead(length: number, auth: [string, string][] = []): string {
  const headers: [string, string][] = [HOST, ...auth, JSON_TYPE, ['Content-Length', String(length)]]
  return rawRequest('POST', '/v1/pets', headers)
}

/** Sends `head`, then a body of spaces at one every 50 ms, never whole; collects until closed. */
const slowBody = (port: number, head: string) =>
  exchange(port, head, { answers: 2, trickle: { pieces: Array(60).fill(' '), intervalMs: 50 } })

async function petCount(a: TestApp): Promise<number> {
  const res = await a.call({ method: 'GET', url: '/v1/pets?limit=100' })
  return (JSON.parse(res.body) as unknown[]).length
}

describe('HTTP at the edge', () => {
  test('Host: none or two is 400 (RFC 9112 §3.2); HTTP/1.0 may leave it out', async (t) => {
    const { a, port } = await served(t)
    const hostRule = 'the request must carry exactly one Host header'
    for (const [target, headers] of [
      ['/healthz', []],
      ['/v1/pets', [bearer(a.key)]],
      ['/healthz', [HOST, ['host', 'other.test']]],
      ['/v1/pets', [HOST, ['Host', 'petstore.test'], bearer(a.key)]],
    ] as [string, [string, string][]][]) {
      assertError(
        await one(port, rawRequest('GET', target, headers)),
        400,
        'invalid_request',
        hostRule,
      )
    }
    const old = await one(port, 'GET /healthz HTTP/1.0\r\n\r\n')
    assert.equal(old.status, 200)
    assert.equal(old.body, '{"status":"ok"}')
  })

  test('two Authorization headers are 400, whichever of them is valid', async (t) => {
    const { a, port } = await served(t)
    for (const pair of [
      [bearer(a.key), bearer(a.key)],
      [bearer(a.key), ['authorization', 'Bearer wrong']],
      [['Authorization', 'Bearer wrong'], bearer(a.key)],
    ] as [string, string][][]) {
      for (const [method, target, body] of [
        ['GET', '/v1/pets', undefined],
        ['GET', '/v1/pets/1', undefined],
        ['POST', '/v1/pets', PET],
      ] as const) {
        const headers = [HOST, ...pair, ...(body ? [JSON_TYPE] : [])]
        assertError(
          await one(port, rawRequest(method, target, headers, body)),
          400,
          'invalid_request',
          'the request must carry at most one Authorization header',
        )
      }
    }
    assert.equal(await petCount(a), 0)
  })

  test('a Content-Encoding other than identity is 415, after authentication; nothing is created', async (t) => {
    const { a, port } = await served(t)
    for (const encoding of ['gzip', 'br', 'deflate, gzip', 'GZIP']) {
      const headers = [HOST, bearer(a.key), JSON_TYPE, ['Content-Encoding', encoding]] as [
        string,
        string,
      ][]
      assertError(
        await one(port, rawRequest('POST', '/v1/pets', headers, PET)),
        415,
        'unsupported_media_type',
        'Content-Encoding is not supported: send the request body uncompressed',
      )
    }
    const stranger = await one(
      port,
      rawRequest('POST', '/v1/pets', [HOST, JSON_TYPE, ['Content-Encoding', 'gzip']], PET),
    )
    assert.equal(stranger.status, 401)
    assert.equal(await petCount(a), 0)
    const identity = await one(
      port,
      rawRequest(
        'POST',
        '/v1/pets',
        [HOST, bearer(a.key), JSON_TYPE, ['Content-Encoding', 'identity']],
        PET,
      ),
    )
    assert.equal(identity.status, 201)
    assert.equal(await petCount(a), 1)
  })

  test('a key is checked before a byte of the body is read: a stranger is answered at once', async (t) => {
    const { a, port } = await served(t)
    // Headers announcing a body that never comes: only a key-holder's request waits for it.
    const head = (auth: [string, string][]) => createHead(50_000, auth)
    for (const auth of [[], [['Authorization', 'Bearer wrong']], [bearer(`${a.key}x`)]] as [
      string,
      string,
    ][][]) {
      // The body never comes, so an answer at all (not the request timeout's 408) is at once.
      const x = await exchange(port, head(auth))
      assert.equal(x.answers[0]?.status, 401, JSON.stringify(auth))
    }
    const holder = await exchange(port, head([bearer(a.key)]), { timeoutMs: 500 })
    assert.deepEqual(holder.answers, [], 'a key-holder is waited for')
  })

  test('JSON nested deeper than 32 levels is 400 without being parsed; 32 levels are parsed', async (t) => {
    const { a, port } = await served(t)
    const nested = (levels: number) =>
      `{"name":"Rex","categoryId":1,"extra":${'['.repeat(levels - 1)}${']'.repeat(levels - 1)}}`
    const post = (body: string, key = a.key) =>
      one(port, rawRequest('POST', '/v1/pets', [HOST, bearer(key), JSON_TYPE], body))
    assertError(
      await post(nested(33)),
      400,
      'invalid_request',
      'request body nests arrays or objects deeper than 32 levels',
    )
    // Brackets inside strings are text, not nesting.
    const inString = `{"name":"${'['.repeat(40)}","categoryId":1,"extra":${'['.repeat(31)}${']'.repeat(31)}}`
    assertError(await post(inString), 400, 'invalid_request', "unknown field 'extra'")
    assertError(await post(nested(32)), 400, 'invalid_request', "unknown field 'extra'")
    const deep = `[${'['.repeat(30_000)}${']'.repeat(30_000)}]`
    assertError(
      await post(deep),
      400,
      'invalid_request',
      'request body nests arrays or objects deeper than 32 levels',
    )
    assert.equal((await post(deep, 'wrong')).status, 401)
    assert.equal(await petCount(a), 0)
  })

  test('a 413 reaches a client that sends its whole 2 MiB body before reading; the connection goes on', async (t) => {
    const { a, port } = await served(t)
    const body = Buffer.alloc(2 * 1024 * 1024, 'a')
    const head = createHead(body.length, [bearer(a.key)])
    const next = rawRequest('GET', '/healthz', [HOST])
    for (let round = 0; round < 5; round++) {
      const x = await exchange(port, Buffer.concat([Buffer.from(head), body, Buffer.from(next)]), {
        answers: 2,
        readAfterWriting: true,
      })
      assert.equal(x.error, undefined)
      assert.equal(x.answers.length, 2)
      assertError(
        x.answers[0]!,
        413,
        'payload_too_large',
        'request body is larger than 65536 bytes',
      )
      assert.equal(x.answers[1]!.status, 200)
    }
  })

  // The request and keep-alive timeouts of every transport are in transport-limits.test.ts.
  describe('timeouts (PETSTORE_REQUEST_TIMEOUT=1s)', () => {
    const timeout = { requestTimeoutMs: 1000 }

    test('a body still arriving after its answer is cut at the timeout without a second answer', async (t) => {
      const { a, port } = await served(t, timeout)
      const x = await slowBody(port, createHead(100))
      assert.equal(x.closed, true)
      assert.deepEqual(
        x.answers.map((r) => r.status),
        [401],
      )
      assert.equal(x.rest, '')
      // Cut by the timeout, not when the client gives up: a generous bound past the 1 s.
      assert.ok(x.elapsedMs < 3000, `after ${x.elapsedMs} ms`)
      assert.equal(await petCount(a), 0)
    })
  })
})
