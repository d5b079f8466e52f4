// The same limits on every transport the service offers: plain HTTP, HTTPS, and HTTP/2 with its
// HTTP/1.1 fallback. Raw sockets and hand-written HTTP/2 frames, with a 1 s request timeout and a
// 2 s keep-alive timeout, so a limit that does not hold shows as a connection still open.
import assert from 'node:assert/strict'
import { once } from 'node:events'
import http2, { type ClientHttp2Session } from 'node:http2'
import { type AddressInfo, type Socket, connect as tcpConnect } from 'node:net'
import { describe, type TestContext, test } from 'node:test'
import { setTimeout as sleep } from 'node:timers/promises'
import { connect as tlsConnect } from 'node:tls'
import type { Config } from '../../src/config.js'
import { testApp } from '../support/app.js'
import { errorBody } from '../support/errors.js'
import { Flag, FrameType, frame, headerBlock, OPENING, rawH2Session } from '../support/raw-h2.js'
import {
  type ExchangeOptions,
  exchange,
  header,
  type RawAnswer,
  rawRequest,
} from '../support/raw-http.js'
import { certificate, tlsServer } from '../support/tls.js'

const REQUEST_TIMEOUT_MS = 1000
const KEEP_ALIVE_TIMEOUT_MS = 2000
const LIMITS: Partial<Config> = {
  requestTimeoutMs: REQUEST_TIMEOUT_MS,
  keepAliveTimeoutMs: KEEP_ALIVE_TIMEOUT_MS,
}
/** A limit counts as held when the connection closed before this: the timeout plus slack. */
const SLACK_MS = 2000
/** A limit that does not hold leaves a wait hanging: the test fails instead. */
const GUARD = { timeout: 20_000 }
const HOST: [string, string] = ['Host', 'petstore.test']
const TIMED_OUT = errorBody(408, 'invalid_request', 'the request did not arrive in full in time')
const TOO_LARGE = errorBody(413, 'payload_too_large', 'request body is larger than 65536 bytes')

interface Served {
  port: number
  key: string
  /** Opens an HTTP/1.1 connection the way this transport's clients do. */
  connect(): Socket
}

interface Transport {
  name: string
  tls: boolean
  serve(t: TestContext): Promise<Served>
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
    tls: false,
    async serve(t) {
      const a = await testApp(t, { config: LIMITS })
      await a.app.listen({ port: 0, host: '127.0.0.1' })
      const port = (a.app.server.address() as AddressInfo).port
      return { port, key: a.key, connect: () => tcpConnect(port, '127.0.0.1') }
    },
  },
  {
    name: 'HTTPS',
    tls: true,
    async serve(t) {
      const s = await tlsServer(t, { http2: false, config: LIMITS })
      return { port: s.port, key: s.key, connect: () => tlsSocket(s.port) }
    },
  },
  {
    name: 'HTTP/1.1 fallback of HTTP/2',
    tls: true,
    async serve(t) {
      const s = await tlsServer(t, { http2: true, config: LIMITS })
      return { port: s.port, key: s.key, connect: () => tlsSocket(s.port, ['http/1.1']) }
    },
  },
]

function assertErrorAnswer(answer: RawAnswer | undefined, expected: object) {
  assert.ok(answer, 'an answer')
  assert.deepEqual(JSON.parse(answer.body), expected)
  assert.equal(answer.status, (expected as { status: number }).status)
  assert.equal(header(answer, 'content-type'), 'application/json; charset=utf-8')
  assert.match(header(answer, 'x-request-id') ?? '', /^[0-9a-f-]{36}$/)
}

function assertClosedWithin(elapsedMs: number, timeoutMs: number) {
  assert.ok(elapsedMs >= timeoutMs * 0.9, `closed after ${elapsedMs} ms, before ${timeoutMs} ms`)
  assert.ok(elapsedMs < timeoutMs + SLACK_MS, `still open ${elapsedMs} ms after ${timeoutMs} ms`)
}

/**
 * Sends `bytes` (then `trickle`, if given) and expects the request timeout: one 408 with the Error
 * body, and the connection closed at the timeout. The answer.
 */
async function timedOut(s: Served, bytes: string, trickle?: ExchangeOptions['trickle']) {
  const x = await exchange(s.port, bytes, { answers: 2, connect: s.connect, trickle })
  assert.equal(x.closed, true)
  assert.equal(x.answers.length, 1)
  assertErrorAnswer(x.answers[0], TIMED_OUT)
  assertClosedWithin(x.elapsedMs, REQUEST_TIMEOUT_MS)
  return x.answers[0]!
}

const createHead = (key: string, length: number, extra: [string, string][] = []) =>
  rawRequest('POST', '/v1/pets', [
    HOST,
    ['Authorization', `Bearer ${key}`],
    ['Content-Type', 'application/json'],
    ['Content-Length', String(length)],
    ...extra,
  ])

/**
 * Writes `head` and then `body` in 16 KiB slices 1 ms apart, reading nothing until every byte is
 * written, as a plain upload does; then reads the answer.
 */
async function uploadThenRead(open: () => Socket, head: string, body: Buffer) {
  const socket = open()
  socket.pause()
  let received = Buffer.alloc(0)
  let error: string | undefined
  socket.on('data', (chunk: Buffer) => {
    received = Buffer.concat([received, chunk])
  })
  socket.on('error', (err: NodeJS.ErrnoException) => {
    error = err.code
  })
  const closed = once(socket, 'close')
  socket.write(head)
  for (let at = 0; at < body.length && error === undefined; at += 16 * 1024) {
    socket.write(body.subarray(at, at + 16 * 1024))
    await sleep(1)
  }
  socket.resume()
  await Promise.race([closed, sleep(10_000)])
  socket.destroy()
  return { text: received.toString('latin1'), error }
}

for (const transport of TRANSPORTS) {
  describe(`${transport.name}: limits`, () => {
    test(
      'headers not complete within the request timeout: 408 with the Error body, then close',
      GUARD,
      async (t) => {
        const s = await transport.serve(t)
        const answer = await timedOut(s, 'GET /healthz HTTP/1.1\r\nHost: petstore.test\r\n')
        assert.equal(header(answer, 'connection'), 'close')
        if (transport.tls) assert.equal(header(answer, 'strict-transport-security'), 'max-age=600')
      },
    )

    test(
      'a body not complete within the request timeout: 408, then close; nothing created',
      GUARD,
      async (t) => {
        const s = await transport.serve(t)
        await timedOut(s, createHead(s.key, 100), { pieces: Array(60).fill(' '), intervalMs: 50 })
      },
    )

    test(
      'a connection that sends nothing (no TLS handshake either) is closed at the request timeout',
      GUARD,
      async (t) => {
        const s = await transport.serve(t)
        const x = await exchange(s.port, '', { timeoutMs: 5000 })
        assert.equal(x.closed, true)
        assert.deepEqual([x.answers, x.rest], [[], ''])
        assertClosedWithin(x.elapsedMs, REQUEST_TIMEOUT_MS)
      },
    )

    test('an idle keep-alive connection is closed at the keep-alive timeout', GUARD, async (t) => {
      const s = await transport.serve(t)
      const x = await exchange(s.port, rawRequest('GET', '/healthz', [HOST]), {
        answers: 2,
        timeoutMs: 10_000,
        connect: s.connect,
      })
      assert.equal(x.closed, true)
      assert.deepEqual(
        x.answers.map((a) => a.status),
        [200],
      )
      assert.equal(header(x.answers[0]!, 'keep-alive'), `timeout=${KEEP_ALIVE_TIMEOUT_MS / 1000}`)
      assertClosedWithin(x.elapsedMs, KEEP_ALIVE_TIMEOUT_MS)
    })

    test('an answer sent before the body ended reaches a client that writes its whole body first, with Connection: close', {
      timeout: 120_000,
    }, async (t) => {
      const s = await transport.serve(t)
      const body = Buffer.alloc(1024 * 1024, 'a')
      const head = createHead(s.key, body.length, [['Connection', 'close']])
      const statuses: string[] = []
      // Four clients at once, 75 uploads each.
      await Promise.all(
        Array.from({ length: 4 }, async () => {
          for (let i = 0; i < 75; i++) {
            const { text, error } = await uploadThenRead(s.connect, head, body)
            statuses.push(error ?? text.slice(0, 12))
            if (!text.startsWith('HTTP/1.1 413')) continue
            assert.deepEqual(JSON.parse(text.slice(text.indexOf('\r\n\r\n') + 4)), TOO_LARGE)
          }
        }),
      )
      assert.deepEqual(new Set(statuses), new Set(['HTTP/1.1 413']), statuses.join(' '))
      assert.equal(statuses.length, 300)
    })
  })
}

describe('TLS: limits of the handshake', () => {
  for (const http2 of [false, true]) {
    test(
      `a handshake trickled a byte at a time is cut at the request timeout (HTTP/2 ${http2 ? 'on' : 'off'})`,
      GUARD,
      async (t) => {
        const s = await tlsServer(t, { http2, config: LIMITS })
        // A TLS record header announcing a ClientHello, then a byte every 100 ms.
        const x = await exchange(s.port, Buffer.from([0x16, 0x03, 0x01, 0x02, 0x00]), {
          timeoutMs: 5000,
          trickle: { pieces: Array(40).fill('\x01'), intervalMs: 100 },
        })
        assert.equal(x.closed, true)
        assertClosedWithin(x.elapsedMs, REQUEST_TIMEOUT_MS)
      },
    )
  }
})

describe('HTTP/2: limits of sessions and streams', () => {
  const serve = (t: TestContext) => tlsServer(t, { http2: true, config: LIMITS })
  const GET_HEALTHZ = headerBlock([
    [':method', 'GET'],
    [':scheme', 'https'],
    [':authority', '127.0.0.1'],
    [':path', '/healthz'],
  ])

  test(
    'a session that sends only its preface is closed at the request timeout',
    GUARD,
    async (t) => {
      const s = await serve(t)
      const session = await rawH2Session(s.port, certificate().cert, OPENING)
      assertClosedWithin(await session.closed, REQUEST_TIMEOUT_MS)
      assert.ok(session.frames.includes(FrameType.GOAWAY), `frames: ${session.frames}`)
    },
  )

  test(
    'a header block never ended (HEADERS without END_HEADERS) is closed at the request timeout',
    GUARD,
    async (t) => {
      const s = await serve(t)
      const bytes = Buffer.concat([OPENING, frame(FrameType.HEADERS, 0, 1, GET_HEALTHZ)])
      const session = await rawH2Session(s.port, certificate().cert, bytes)
      assertClosedWithin(await session.closed, REQUEST_TIMEOUT_MS)
    },
  )

  test('PINGs do not keep a session without streams open', GUARD, async (t) => {
    const s = await serve(t)
    const session = await rawH2Session(s.port, certificate().cert, OPENING)
    const ping = frame(FrameType.PING, 0, 0, Buffer.alloc(8))
    const pinger = setInterval(() => session.socket.write(ping), 100)
    t.after(() => clearInterval(pinger))
    assertClosedWithin(await session.closed, REQUEST_TIMEOUT_MS)
  })

  test('a session idle after its streams is closed at the keep-alive timeout', GUARD, async (t) => {
    const s = await serve(t)
    const request = frame(FrameType.HEADERS, Flag.END_HEADERS | Flag.END_STREAM, 1, GET_HEALTHZ)
    const session = await rawH2Session(
      s.port,
      certificate().cert,
      Buffer.concat([OPENING, request]),
    )
    const closedAfter = await session.closed
    assert.ok(session.frames.includes(FrameType.HEADERS), 'the request was answered')
    assertClosedWithin(closedAfter, KEEP_ALIVE_TIMEOUT_MS)
  })

  async function h2Session(t: TestContext, origin: string): Promise<ClientHttp2Session> {
    const session = http2.connect(origin, { ca: certificate().cert })
    t.after(() => session.destroy())
    session.on('error', () => {})
    await once(session, 'connect')
    return session
  }

  test(
    'a stream whose body stalls is answered 408 with the Error body, and the session goes away',
    GUARD,
    async (t) => {
      const s = await serve(t)
      const session = await h2Session(t, s.origin)
      const goaway = once(session, 'goaway')
      const started = performance.now()
      const stream = session.request({
        ':method': 'POST',
        ':path': '/v1/pets',
        authorization: `Bearer ${s.key}`,
        'content-type': 'application/json',
        'content-length': '100',
      })
      stream.write('{"name":')
      const [headers] = (await once(stream, 'response')) as [http2.IncomingHttpHeaders]
      let body = ''
      stream.setEncoding('utf8')
      stream.on('data', (chunk: string) => {
        body += chunk
      })
      await once(stream, 'close')
      assertClosedWithin(performance.now() - started, REQUEST_TIMEOUT_MS)
      assert.equal(headers[':status'], 408)
      assert.equal(headers['content-type'], 'application/json; charset=utf-8')
      assert.equal(headers['strict-transport-security'], 'max-age=600')
      assert.match(String(headers['x-request-id']), /^[0-9a-f-]{36}$/)
      assert.deepEqual(JSON.parse(body), TIMED_OUT)
      await goaway
    },
  )

  test(
    'a 413 sent before the body ended reaches a client that writes its whole body first',
    GUARD,
    async (t) => {
      const s = await serve(t)
      const body = Buffer.alloc(1024 * 1024, 'a')
      for (let i = 0; i < 30; i++) {
        const session = await h2Session(t, s.origin)
        const stream = session.request({
          ':method': 'POST',
          ':path': '/v1/pets',
          authorization: `Bearer ${s.key}`,
          'content-type': 'application/json',
        })
        stream.on('error', () => {})
        stream.end(body)
        const [headers] = (await once(stream, 'response')) as [http2.IncomingHttpHeaders]
        let text = ''
        stream.setEncoding('utf8')
        for await (const chunk of stream) text += chunk
        assert.equal(headers[':status'], 413)
        assert.deepEqual(JSON.parse(text), TOO_LARGE)
        session.close()
      }
    },
  )
})
