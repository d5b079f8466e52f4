// Answers decided before the body is in, on every transport the service offers, with raw sockets:
// a request refused on its head (key, rate limit, declared length, media type) gets its final
// answer instead of `100 Continue`; a declared length over the limit is 413 while the client still
// holds its body; and on a connection that closes after such an answer, the rest of the body is
// read before the close, within DISCARD_MAX_BYTES and the request timeout.
import assert from 'node:assert/strict'
import { once } from 'node:events'
import http2, { type ClientHttp2Session, type ClientHttp2Stream } from 'node:http2'
import { type AddressInfo, type Socket, connect as tcpConnect } from 'node:net'
import { describe, type TestContext, test } from 'node:test'
import { connect as tlsConnect } from 'node:tls'
import { createApiKey } from '../../src/auth/api-keys.js'
import type { Clock } from '../../src/clock.js'
import type { Config } from '../../src/config.js'
import { DISCARD_MAX_BYTES } from '../../src/http/early-answer.js'
import type { Store } from '../../src/storage/store.js'
import { testApp } from '../support/app.js'
import { type ErrorBody, errorBody, INVALID_TOKEN, NO_KEY } from '../support/errors.js'
import { RawConnection, type RawResponse, rawRequest } from '../support/raw-http.js'
import { certificate, tlsServer } from '../support/tls.js'

/** Each key's budget: a fresh key per case, and one spent on purpose for the 429. */
const RATE_LIMIT = 3
const CONFIG: Partial<Config> = { rateLimitMax: RATE_LIMIT }
const HOST: [string, string] = ['Host', 'petstore.test']
const PET = '{"name":"Rex","categoryId":7}'
const CREATED = /^\{"id":\d+,"name":"Rex","categoryId":7\}$/
const TOO_LARGE = errorBody(413, 'payload_too_large', 'request body is larger than 65536 bytes')
const NOT_JSON = errorBody(415, 'unsupported_media_type', 'request body must be application/json')
const NOT_UTF8 = errorBody(
  415,
  'unsupported_media_type',
  'request body must be UTF-8 application/json',
)
const RATE_LIMITED = errorBody(429, 'rate_limited', 'rate limit of this API key exceeded')
const TEN_MB = 10_000_000
/** A wait that never ends fails the test instead. */
const GUARD = { timeout: 30_000 }

interface Served {
  port: number
  key: string
  /** A key of its own, with a whole budget. */
  newKey(): Promise<string>
  /** Opens an HTTP/1.1 connection the way this transport's clients do. */
  connect(): Socket
}

interface Transport {
  name: string
  serve(t: TestContext, config?: Partial<Config>): Promise<Served>
}

const keyMaker = (store: Store, clock: Clock) => {
  let made = 0
  return async () => (await createApiKey(store, clock, `key-${++made}`)).key
}

const tlsSocket = (port: number, alpn?: string[]) =>
  tlsConnect({
    port,
    host: '127.0.0.1',
    ca: certificate().cert,
    ...(alpn ? { ALPNProtocols: alpn } : {}),
  })

const TRANSPORTS: Transport[] = [
  {
    name: 'plain HTTP',
    async serve(t, config = {}) {
      const a = await testApp(t, { config: { ...CONFIG, ...config } })
      await a.app.listen({ port: 0, host: '127.0.0.1' })
      const port = (a.app.server.address() as AddressInfo).port
      return {
        port,
        key: a.key,
        newKey: keyMaker(a.store, a.clock),
        connect: () => tcpConnect(port, '127.0.0.1'),
      }
    },
  },
  {
    name: 'HTTPS',
    async serve(t, config = {}) {
      const s = await tlsServer(t, { http2: false, config: { ...CONFIG, ...config } })
      return { ...s, newKey: keyMaker(s.store, s.clock), connect: () => tlsSocket(s.port) }
    },
  },
  {
    name: 'HTTP/1.1 on the HTTP/2 port',
    async serve(t, config = {}) {
      const s = await tlsServer(t, { http2: true, config: { ...CONFIG, ...config } })
      return {
        ...s,
        newKey: keyMaker(s.store, s.clock),
        connect: () => tlsSocket(s.port, ['http/1.1']),
      }
    },
  },
]

interface Head {
  key?: string
  type?: string
  length: number
  headers?: [string, string][]
}

/** The head of a create, without its body. */
function createHead({ key, type = 'application/json', length, headers = [] }: Head): string {
  return rawRequest('POST', '/v1/pets', [
    HOST,
    ...(key === undefined ? [] : [['Authorization', `Bearer ${key}`] as [string, string]]),
    ['Content-Type', type],
    ['Content-Length', String(length)],
    ...headers,
  ])
}

const EXPECT: [string, string] = ['Expect', '100-continue']
const CLOSE: [string, string] = ['Connection', 'close']

/** A connection of its own; a test ends each it leaves open, as the app's close waits for it. */
async function open(t: TestContext, s: Served): Promise<RawConnection> {
  const connection = await RawConnection.open(s.port, s.connect)
  t.after(() => connection.destroy())
  return connection
}

function assertRefused(answer: RawResponse, expected: ErrorBody, what: string): void {
  assert.equal(answer.status, expected.status, `${what}: ${answer.status} ${answer.body}`)
  assert.deepEqual(JSON.parse(answer.body), expected, what)
  assert.equal(answer.headers['content-type'], 'application/json; charset=utf-8', what)
}

/** Spends `key`'s whole budget, so that its next request is 429. */
async function spend(t: TestContext, s: Served, key: string): Promise<void> {
  const connection = await open(t, s)
  for (let i = 0; i < RATE_LIMIT; i++) {
    connection.write(rawRequest('GET', '/v1/pets', [HOST, ['Authorization', `Bearer ${key}`]]))
    assert.equal((await connection.next()).status, 200)
  }
  connection.destroy()
}

/** The heads refused before their body is read, with their answers; `limited` has no budget. */
async function refusedHeads(key: string, limited: string) {
  const length = PET.length
  return [
    { what: 'no key', head: { length }, answer: NO_KEY },
    { what: 'a key unknown', head: { key: 'pet_unknown', length }, answer: INVALID_TOKEN },
    { what: 'a key past its rate limit', head: { key: limited, length }, answer: RATE_LIMITED },
    { what: 'a declared length over 64 KiB', head: { key, length: TEN_MB }, answer: TOO_LARGE },
    { what: 'text/plain', head: { key, type: 'text/plain', length }, answer: NOT_JSON },
    {
      what: 'JSON in Latin-1',
      head: { key, type: 'application/json; charset=iso-8859-1', length },
      answer: NOT_UTF8,
    },
  ]
}

for (const transport of TRANSPORTS) {
  describe(`${transport.name}: Expect: 100-continue`, () => {
    test(
      'a request refused on its head gets its final answer instead of 100 Continue, no byte of its body sent',
      GUARD,
      async (t) => {
        const s = await transport.serve(t)
        const limited = await s.newKey()
        await spend(t, s, limited)
        for (const c of await refusedHeads(await s.newKey(), limited)) {
          const connection = await open(t, s)
          connection.write(createHead({ ...c.head, headers: [EXPECT] }))
          const answer = await connection.next()
          assertRefused(answer, c.answer, c.what)
          // The body may still come (RFC 9110 §10.1.1): the connection closes after the answer.
          assert.equal(answer.headers.connection, 'close', c.what)
          // The client gives up its body; the service closes the connection, without a reset.
          connection.end()
          await connection.closed
          assert.equal(connection.error, undefined, c.what)
        }
      },
    )

    test(
      'an admitted request gets 100 Continue, then its body is read and created; the connection stays open',
      GUARD,
      async (t) => {
        const s = await transport.serve(t)
        const connection = await open(t, s)
        const idempotent: [string, string] = ['Idempotency-Key', 'expect-1']
        for (const headers of [[EXPECT], [EXPECT, idempotent]]) {
          connection.write(createHead({ key: s.key, length: PET.length, headers }))
          assert.equal((await connection.next()).status, 100)
          connection.write(PET)
          const created = await connection.next()
          assert.equal(created.status, 201, created.body)
          assert.match(created.body, CREATED)
        }
        // A client that sends its body without waiting for the 100 (RFC 9110 §10.1.1 allows it).
        connection.write(
          `${createHead({ key: s.key, length: PET.length, headers: [EXPECT] })}${PET}`,
        )
        let created = await connection.next()
        if (created.status === 100) created = await connection.next()
        assert.equal(created.status, 201, created.body)
        assert.equal(created.headers.connection, 'keep-alive')
        connection.write(rawRequest('GET', '/healthz', [HOST]))
        assert.equal((await connection.next()).status, 200)
      },
    )
  })

  describe(`${transport.name}: answers before the body is in`, () => {
    for (const headers of [[], [CLOSE]] as [string, string][][]) {
      const connection = headers.length === 0 ? 'a connection that stays open' : 'Connection: close'
      test(
        `a declared length of 10 MB is 413 while the client still holds all but 1 KiB of it (${connection})`,
        GUARD,
        async (t) => {
          const s = await transport.serve(t)
          const upload = await open(t, s)
          upload.write(createHead({ key: s.key, length: TEN_MB, headers }))
          upload.write(Buffer.alloc(1024, 'a'))
          assertRefused(await upload.next(), TOO_LARGE, connection)
          upload.destroy()
        },
      )
    }

    test(
      'Connection: close: the rest of the body, sent after the answer, is read before the close; no reset',
      GUARD,
      async (t) => {
        const s = await transport.serve(t)
        const body = Buffer.alloc(1024 * 1024, 'a')
        for (const key of [undefined, s.key]) {
          const upload = await open(t, s)
          upload.write(createHead({ key, length: body.length, headers: [CLOSE] }))
          upload.write(body.subarray(0, 1024))
          assertRefused(await upload.next(), key === undefined ? NO_KEY : TOO_LARGE, String(key))
          assert.equal(await upload.send(body.subarray(1024)), true, 'the rest was taken')
          await upload.closed
          assert.equal(upload.error, undefined, 'closed without a reset')
        }
      },
    )

    test(
      `Connection: close: past ${DISCARD_MAX_BYTES} bytes discarded the connection closes`,
      GUARD,
      async (t) => {
        const s = await transport.serve(t)
        const declared = 8 * DISCARD_MAX_BYTES
        const upload = await open(t, s)
        upload.write(createHead({ key: s.key, length: declared, headers: [CLOSE] }))
        const chunk = Buffer.alloc(1024 * 1024, 'a')
        upload.write(chunk)
        assertRefused(await upload.next(), TOO_LARGE, 'the answer')
        let sent = chunk.length
        while (sent < declared && (await upload.send(chunk))) sent += chunk.length
        await upload.closed
        assert.ok(sent < declared, `the whole ${declared} bytes were taken`)
      },
    )

    test(
      'a refused request whose body never comes: the answer at once, then closed at the request timeout, once',
      GUARD,
      async (t) => {
        const s = await transport.serve(t, { requestTimeoutMs: 1000 })
        const heads = [
          createHead({ length: PET.length, headers: [EXPECT] }),
          `${createHead({ length: 1024 * 1024, headers: [CLOSE] })}${'a'.repeat(1024)}`,
          `${createHead({ length: 1024 * 1024 })}${'a'.repeat(1024)}`,
        ]
        await Promise.all(
          heads.map(async (head) => {
            const upload = await open(t, s)
            upload.write(head)
            assertRefused(await upload.next(), NO_KEY, head)
            await upload.closed
            await assert.rejects(upload.next(), /closed before a whole response/, 'a second answer')
          }),
        )
      },
    )
  })
}

describe('HTTP/2: Expect: 100-continue', () => {
  async function served(t: TestContext, config: Partial<Config> = {}) {
    const s = await tlsServer(t, { http2: true, config: { ...CONFIG, ...config } })
    const session = http2.connect(s.origin, { ca: certificate().cert })
    t.after(() => session.destroy())
    session.on('error', () => {})
    await once(session, 'connect')
    return { ...s, session, newKey: keyMaker(s.store, s.clock) }
  }

  /** A create's HEADERS only; `continued` says whether a 100 came before the final answer. */
  function create(session: ClientHttp2Session, head: Head & { expect?: boolean }) {
    const stream = session.request(
      {
        ':method': 'POST',
        ':path': '/v1/pets',
        ...(head.key === undefined ? {} : { authorization: `Bearer ${head.key}` }),
        'content-type': head.type ?? 'application/json',
        'content-length': String(head.length),
        ...(head.expect === false ? {} : { expect: '100-continue' }),
      },
      { endStream: false },
    )
    stream.on('error', () => {})
    let continued = false
    stream.once('continue', () => {
      continued = true
    })
    return { stream, continued: () => continued }
  }

  /** The answer, whole; `closed` gives the code the stream closed with (RST_STREAM's, if any). */
  async function answer(stream: ClientHttp2Stream) {
    const closed = once(stream, 'close').then(() => stream.rstCode)
    const [headers] = (await once(stream, 'response')) as [http2.IncomingHttpHeaders]
    let body = ''
    stream.setEncoding('utf8')
    stream.on('data', (chunk: string) => {
      body += chunk
    })
    await once(stream, 'end')
    return { status: headers[':status'], body, closed }
  }

  test(
    'a request refused on its headers gets its final answer instead of 100 Continue, no DATA sent',
    GUARD,
    async (t) => {
      const s = await served(t)
      const limited = await s.newKey()
      for (let i = 0; i < RATE_LIMIT; i++) {
        const list = s.session.request({ ':path': '/v1/pets', authorization: `Bearer ${limited}` })
        assert.equal((await answer(list)).status, 200)
      }
      for (const c of await refusedHeads(await s.newKey(), limited)) {
        const { stream, continued } = create(s.session, c.head)
        const got = await answer(stream)
        assert.equal(continued(), false, `${c.what}: 100 Continue before the answer`)
        assert.equal(got.status, c.answer.status, `${c.what}: ${got.body}`)
        assert.deepEqual(JSON.parse(got.body), c.answer, c.what)
        // The client is told not to send the body (RFC 9113 §8.1), not left to the request timeout.
        assert.equal(await got.closed, http2.constants.NGHTTP2_NO_ERROR, c.what)
      }
      s.session.destroy()
    },
  )

  test(
    'an admitted request gets 100 Continue, then its body is read and created',
    GUARD,
    async (t) => {
      const s = await served(t)
      const { stream } = create(s.session, { key: s.key, length: PET.length })
      await once(stream, 'continue')
      stream.end(PET)
      const got = await answer(stream)
      assert.equal(got.status, 201, got.body)
      assert.match(got.body, CREATED)
      s.session.destroy()
    },
  )

  test(
    'a declared length of 10 MB is 413 while the client still holds all but 1 KiB of it',
    GUARD,
    async (t) => {
      // A request timeout past GUARD: a stream left open until it fails the test.
      const s = await served(t, { requestTimeoutMs: 60_000 })
      const { stream } = create(s.session, { key: s.key, length: TEN_MB, expect: false })
      stream.write(Buffer.alloc(1024, 'a'))
      const got = await answer(stream)
      assert.equal(got.status, 413)
      assert.deepEqual(JSON.parse(got.body), TOO_LARGE)
      assert.equal(await got.closed, http2.constants.NGHTTP2_NO_ERROR)
      s.session.destroy()
    },
  )

  test(
    'without Expect, the rest of a body sent whole after an early answer is read; the stream ends at once',
    GUARD,
    async (t) => {
      // A request timeout past GUARD: a stream left open until it fails the test.
      const s = await served(t, { requestTimeoutMs: 60_000 })
      // Past the flow-control window: a body nobody reads holds the client's stream open.
      const body = Buffer.alloc(1024 * 1024, 'a')
      const cases = [
        { what: 'no key', head: { length: body.length }, answer: NO_KEY },
        {
          what: 'a declared length over 64 KiB',
          head: { key: s.key, length: body.length },
          answer: TOO_LARGE,
        },
      ]
      for (const c of cases) {
        const { stream } = create(s.session, { ...c.head, expect: false })
        stream.end(body)
        const got = await answer(stream)
        assert.equal(got.status, c.answer.status, `${c.what}: ${got.body}`)
        assert.deepEqual(JSON.parse(got.body), c.answer, c.what)
        assert.equal(await got.closed, http2.constants.NGHTTP2_NO_ERROR, c.what)
      }
      // The session serves on.
      const { stream } = create(s.session, { key: s.key, length: PET.length, expect: false })
      stream.end(PET)
      const created = await answer(stream)
      assert.equal(created.status, 201, created.body)
      s.session.destroy()
    },
  )
})
