// What the service sends, on every transport: an answer whose client takes none of it for the
// request timeout (R = 1 s here) is cut, however long a client that reads takes; one HTTP/1.1
// connection has at most MAX_PIPELINED_REQUESTS requests worked on; an answer cut short is logged
// as not delivered; running out of file descriptors is logged once and counted. Raw sockets and
// hand-written HTTP/2 frames that read nothing; every wait is for an event, the deadline's own
// slack is the tests' timeout.
import assert from 'node:assert/strict'
import { once } from 'node:events'
import type { AddressInfo, Socket } from 'node:net'
import { connect as tcpConnect } from 'node:net'
import { describe, type TestContext, test } from 'node:test'
import { setTimeout as sleep } from 'node:timers/promises'
import { connect as tlsConnect } from 'node:tls'
import { fileURLToPath } from 'node:url'
import type { FastifyInstance } from 'fastify'
import { buildApp } from '../../src/app.js'
import { createApiKey } from '../../src/auth/api-keys.js'
import { manualClock } from '../../src/clock.js'
import { type Config, configWith } from '../../src/config.js'
import { SPARE_FILE_DESCRIPTORS } from '../../src/http/file-descriptors.js'
import { MAX_PIPELINED_REQUESTS } from '../../src/http/send-deadline.js'
import { loadTls } from '../../src/http/tls.js'
import { loggerOptions } from '../../src/observability/logging.js'
import type { Store } from '../../src/storage/store.js'
import { openTestStore, tempDir } from '../support/app.js'
import { type LogLine, parseLogLines, startService } from '../support/process.js'
import {
  ErrorCode,
  Flag,
  type Frame,
  FrameType,
  frame,
  headerBlock,
  PREFACE,
  type RawSession,
  rawH2Session,
  Setting,
  settingsFrame,
  windowUpdate,
} from '../support/raw-h2.js'
import { exchange } from '../support/raw-http.js'
import { storeIndependent } from '../support/stores.js'
import { certificate } from '../support/tls.js'

const REQUEST_TIMEOUT_MS = 1000
/** Far past every test: a connection that closes was cut by the send deadline, not left idle. */
const KEEP_ALIVE_TIMEOUT_MS = 120_000
const LIMITS: Partial<Config> = {
  requestTimeoutMs: REQUEST_TIMEOUT_MS,
  keepAliveTimeoutMs: KEEP_ALIVE_TIMEOUT_MS,
}
/** A limit that does not hold leaves a wait hanging: the test fails instead. */
const GUARD = { timeout: 60_000 }
/** Redoc's script, served without a key: some 1.1 MB, more than loopback buffers take at once. */
const ASSET = '/docs/redoc.standalone.js'
const ASSET_BYTES_AT_LEAST = 1_000_000
const get = (path: string) => `GET ${path} HTTP/1.1\r\nHost: petstore.test\r\n\r\n`

type Kind = 'plain' | 'https' | 'fallback' | 'h2'

interface Served {
  app: FastifyInstance
  store: Store
  port: number
  /** The log lines written so far. */
  lines(): LogLine[]
  /** Opens a client connection as this transport's HTTP/1.1 clients do. */
  connect(): Socket
  /** The server's side of the next connection, once it is up (TLS: its handshake done). */
  accepted(): Promise<Socket>
}

/** buildApp on a fresh store with `kind`'s transport, logging to memory; `setup` runs before listen. */
async function serve(
  t: TestContext,
  kind: Kind,
  config: Partial<Config> = {},
  setup: (app: FastifyInstance) => void = () => {},
): Promise<Served> {
  const { certPath, keyPath, cert } = certificate()
  const tls = kind === 'plain' ? {} : { tlsCertPath: certPath, tlsKeyPath: keyPath }
  const full = configWith({
    ...LIMITS,
    ...tls,
    http2: kind === 'fallback' || kind === 'h2',
    ...config,
  })
  const text: string[] = []
  const logger = {
    ...loggerOptions(configWith({ logLevel: 'info', logFormat: 'json' }), { isTTY: false }),
    stream: { write: (line: string) => text.push(line) },
  }
  const { store } = await openTestStore(t, tempDir(t), {})
  const app = await buildApp({
    config: full,
    store,
    clock: manualClock(new Date()),
    logger,
    tls: loadTls(full),
  })
  setup(app)
  await app.listen({ port: 0, host: '127.0.0.1' })
  t.after(() => app.close())
  const port = (app.server.address() as AddressInfo).port
  const alpn = kind === 'fallback' ? { ALPNProtocols: ['http/1.1'] } : {}
  return {
    app,
    store,
    port,
    lines: () => parseLogLines(text.join('')),
    connect: () =>
      kind === 'plain'
        ? tcpConnect(port, '127.0.0.1')
        : tlsConnect({ port, host: '127.0.0.1', ca: cert, ...alpn }),
    accepted: async () => {
      const [socket] = await once(app.server, kind === 'plain' ? 'connection' : 'secureConnection')
      return socket as Socket
    },
  }
}

/** The `request completed` lines of the script's answers. */
const assetLines = (s: Served) =>
  s.lines().filter((l) => l.msg === 'request completed' && l.operation === 'docsAsset')

/**
 * Sends `requests` (pipelined) on a connection that reads none of the answers, until the server
 * cuts it; then the number of bytes the client could still read.
 */
async function unreadPipeline(s: Served, requests: string): Promise<number> {
  const accepted = s.accepted()
  const client = s.connect()
  client.on('error', () => {})
  client.pause()
  client.write(requests)
  await closed(await accepted)
  return drain(client)
}

/**
 * Some answers are logged not delivered, each a 200; those the kernel took in full say nothing; no
 * answer has two lines.
 */
function assertSomeUndelivered(lines: LogLine[]) {
  const undelivered = lines.filter((l) => l.delivered === false)
  assert.ok(undelivered.length > 0, JSON.stringify(lines))
  for (const line of undelivered) assert.equal(line.status, 200)
  for (const line of lines) assert.ok(line.delivered === false || !('delivered' in line))
  assert.equal(new Set(lines.map((l) => l.requestId)).size, lines.length)
}

/**
 * Resolves once `socket` is closed, by an end or by an error: a server that closes with requests
 * still unread resets the connection, which its client reads as ECONNRESET.
 */
function closed(socket: Socket): Promise<void> {
  if (socket.closed) return Promise.resolve()
  return new Promise((resolve) => socket.once('close', () => resolve()))
}

/** Reads what `socket` still brings until it closes; the number of bytes. */
async function drain(socket: Socket): Promise<number> {
  let bytes = 0
  socket.on('data', (chunk: Buffer) => {
    bytes += chunk.length
  })
  socket.on('error', () => {})
  const end = closed(socket)
  socket.resume()
  await end
  return bytes
}

/** Counts whole HTTP/1.1 answers (each with Content-Length) as their bytes come, keeping no body. */
class Answers {
  readonly statuses: number[] = []
  private head = Buffer.alloc(0)
  private bodyLeft = 0

  push(chunk: Buffer): void {
    let rest = chunk
    while (rest.length > 0) {
      if (this.bodyLeft > 0) {
        const n = Math.min(this.bodyLeft, rest.length)
        this.bodyLeft -= n
        rest = rest.subarray(n)
        continue
      }
      this.head = Buffer.concat([this.head, rest])
      const end = this.head.indexOf('\r\n\r\n')
      if (end === -1) return
      const text = this.head.subarray(0, end).toString('latin1')
      this.statuses.push(Number(text.split(' ')[1]))
      this.bodyLeft = Number(/\r\ncontent-length: *(\d+)/i.exec(text)?.[1] ?? 0)
      rest = this.head.subarray(end + 4)
      this.head = Buffer.alloc(0)
    }
  }

  /** All `count` answers are whole. */
  complete(count: number): boolean {
    return this.statuses.length >= count && this.bodyLeft === 0
  }
}

const HTTP1: Kind[] = ['plain', 'https', 'fallback']
const NAMES: Record<Kind, string> = {
  plain: 'plain HTTP',
  https: 'HTTPS',
  fallback: 'HTTP/1.1 on the HTTP/2 port',
  h2: 'HTTP/2',
}

for (const kind of HTTP1) {
  describe(`${NAMES[kind]}: what is sent`, () => {
    test(
      'pipelined answers the client reads none of: the connection is cut, the answers logged not delivered',
      GUARD,
      async (t) => {
        const s = await serve(t, kind)
        const received = await unreadPipeline(s, get(ASSET).repeat(16))
        // What the kernel held for the client is all it gets: far from sixteen answers.
        assert.ok(received < 16 * ASSET_BYTES_AT_LEAST, `${received} bytes`)
        assertSomeUndelivered(assetLines(s))
      },
    )

    test(
      'pipelined list pages the client reads none of: the connection is cut, the pages logged not delivered',
      GUARD,
      async (t) => {
        const s = await serve(t, kind)
        const { key } = await createApiKey(s.store, manualClock(new Date()), 'reader')
        // Pages of some 25 KB: a few hundred fill what loopback buffers take.
        const name = 'n'.repeat(200)
        await s.store.insertPets(
          Array.from({ length: 100 }, () => ({
            name,
            categoryId: 1n,
            status: 'available' as const,
          })),
        )
        const list = `GET /v1/pets?limit=100 HTTP/1.1\r\nHost: petstore.test\r\nAuthorization: Bearer ${key}\r\n\r\n`
        await unreadPipeline(s, list.repeat(1000))
        assertSomeUndelivered(
          s.lines().filter((l) => l.msg === 'request completed' && l.operation === 'listPets'),
        )
      },
    )

    test(
      'a client that reads slowly gets every byte, long after the request timeout',
      GUARD,
      async (t) => {
        const s = await serve(t, kind)
        const client = s.connect()
        client.pause()
        const count = 8
        client.write(get(ASSET).repeat(count))
        const answers = new Answers()
        const started = performance.now()
        let ended = false
        client.once('close', () => {
          ended = true
        })
        // At most 16 KiB every 5 ms: steady, a few MB a second, so the answers take seconds.
        while (!ended && !answers.complete(count)) {
          const chunk = (client.read(16 * 1024) ?? client.read()) as Buffer | null
          if (chunk !== null) answers.push(chunk)
          await sleep(5)
        }
        assert.deepEqual(answers.statuses, Array(count).fill(200))
        assert.equal(answers.complete(count), true)
        assert.ok(performance.now() - started > REQUEST_TIMEOUT_MS)
        client.destroy()
        const lines = assetLines(s)
        assert.equal(lines.length, count)
        for (const line of lines) assert.equal('delivered' in line, false)
      },
    )

    test(
      `at most ${MAX_PIPELINED_REQUESTS} pipelined requests are worked on at once; the rest wait, unread`,
      GUARD,
      async (t) => {
        let started = 0
        let finished = 0
        let mostAtOnce = 0
        const s = await serve(t, kind, {}, (app) => {
          app.addHook('onRequest', async () => {
            started++
            mostAtOnce = Math.max(mostAtOnce, started - finished)
          })
          app.addHook('onResponse', async () => {
            finished++
          })
        })
        let parsed = 0
        s.app.server.on('request', () => {
          parsed++
        })
        const accepted = s.accepted()
        const client = s.connect()
        client.on('error', () => {})
        client.pause()
        client.write(get(ASSET).repeat(40))
        await once(await accepted, 'close')
        // Node read all forty at once; the app saw only as many as were answered, and eight more.
        assert.equal(parsed, 40)
        assert.equal(mostAtOnce, MAX_PIPELINED_REQUESTS)
        assert.ok(started < 40, `${started} started`)
        assert.ok(started <= finished + MAX_PIPELINED_REQUESTS)
        client.destroy()
      },
    )

    test('a deep pipeline read as it comes is answered in full and in order', GUARD, async (t) => {
      const s = await serve(t, kind)
      const paths = Array.from({ length: 60 }, (_, i) => (i % 3 === 2 ? '/nowhere' : '/healthz'))
      const x = await exchange(s.port, paths.map(get).join(''), {
        answers: paths.length,
        connect: () => s.connect(),
        timeoutMs: 30_000,
      })
      assert.deepEqual(
        x.answers.map((a) => a.status),
        paths.map((p) => (p === '/healthz' ? 200 : 404)),
      )
    })
  })
}

describe('HTTP/2: what is sent', () => {
  const GET_ASSET = headerBlock([
    [':method', 'GET'],
    [':scheme', 'https'],
    [':authority', '127.0.0.1'],
    [':path', ASSET],
  ])
  const request = (streamId: number) =>
    frame(FrameType.HEADERS, Flag.END_HEADERS | Flag.END_STREAM, streamId, GET_ASSET)
  const shutWindows = settingsFrame([[Setting.INITIAL_WINDOW_SIZE, 0]])
  const isData = (streamId: number) => (f: Frame) =>
    f.type === FrameType.DATA && f.streamId === streamId
  const resetOf = (streamId: number) => (f: Frame) =>
    f.type === FrameType.RST_STREAM && f.streamId === streamId
  const code = (f: Frame) => f.payload.readUInt32BE(0)
  /** The stream's last frame: DATA with END_STREAM, or a RST_STREAM (NO_ERROR once answered). */
  const endOf = (streamId: number) => (f: Frame) =>
    (isData(streamId)(f) && (f.flags & Flag.END_STREAM) !== 0) || resetOf(streamId)(f)
  const dataBytes = (session: RawSession, streamId: number) =>
    session.received.filter(isData(streamId)).reduce((n, f) => n + f.payload.length, 0)

  test(
    'streams whose windows stay shut: the session makes no progress and goes',
    GUARD,
    async (t) => {
      const s = await serve(t, 'h2')
      const session = await rawH2Session(
        s.port,
        certificate().cert,
        Buffer.concat([PREFACE, shutWindows, request(1), request(3)]),
      )
      await session.closed
      assert.ok(session.received.some((f) => f.type === FrameType.HEADERS && f.streamId === 1))
      assert.equal(session.received.filter((f) => f.type === FrameType.DATA).length, 0)
      const lines = assetLines(s)
      assert.deepEqual(
        lines.map((l) => [l.status, l.delivered]),
        [
          [200, false],
          [200, false],
        ],
      )
    },
  )

  test(
    'one stream whose window stays shut is reset, while the session goes on with another',
    GUARD,
    async (t) => {
      const s = await serve(t, 'h2')
      const session = await rawH2Session(
        s.port,
        certificate().cert,
        Buffer.concat([PREFACE, shutWindows, request(1), request(3)]),
      )
      // Stream 3 is read slowly, 16 KiB at a time: until stream 1's reset, and on to its end.
      let ended = false
      const end = session.next(endOf(3))
      void end.then(
        () => {
          ended = true
        },
        () => {},
      )
      const reset = session.next(resetOf(1))
      let resetSeen = false
      void reset.then(
        () => {
          resetSeen = true
        },
        () => {},
      )
      const startedAt = performance.now()
      while (!ended && !session.socket.closed) {
        session.socket.write(
          Buffer.concat([windowUpdate(3, 16 * 1024), windowUpdate(0, 16 * 1024)]),
        )
        await sleep(resetSeen ? 2 : 20)
      }
      assert.equal(code(await reset), ErrorCode.CANCEL)
      assert.equal(ended, true, 'stream 3 ended')
      const last = await end
      if (last.type === FrameType.RST_STREAM) assert.equal(code(last), ErrorCode.NO_ERROR)
      assert.ok(dataBytes(session, 3) > ASSET_BYTES_AT_LEAST, `${dataBytes(session, 3)} bytes`)
      assert.equal(session.socket.closed, false, 'the session is still open')
      assert.ok(performance.now() - startedAt > REQUEST_TIMEOUT_MS)
      assert.equal(dataBytes(session, 1), 0)
      session.socket.destroy()
      await session.closed
      const lines = assetLines(s)
      assert.deepEqual(lines.map((l) => l.delivered ?? true).sort(), [false, true])
    },
  )

  test('a client that reads nothing of its connection: the session goes', GUARD, async (t) => {
    const s = await serve(t, 'h2')
    const accepted = s.accepted()
    // Windows wide open; then the client stops reading, and its connection fills.
    const wide = settingsFrame([[Setting.INITIAL_WINDOW_SIZE, 2 ** 31 - 1]])
    const requests = [1, 3, 5, 7, 9, 11, 13, 15].map(request)
    const session = await rawH2Session(
      s.port,
      certificate().cert,
      Buffer.concat([PREFACE, wide, windowUpdate(0, 2 ** 31 - 1 - 65_535), ...requests]),
    )
    session.socket.pause()
    await once(await accepted, 'close')
    const all = 8 * ASSET_BYTES_AT_LEAST
    session.socket.resume()
    await session.closed
    const bytes = requests.reduce((n, _, i) => n + dataBytes(session, 1 + 2 * i), 0)
    assert.ok(bytes < all, `${bytes} bytes`)
    assert.ok(assetLines(s).some((l) => l.delivered === false))
  })

  test(
    'a client that reads slowly gets every byte, long after the request timeout',
    GUARD,
    async (t) => {
      const s = await serve(t, 'h2')
      const session = await rawH2Session(
        s.port,
        certificate().cert,
        Buffer.concat([PREFACE, shutWindows, request(1)]),
      )
      let ended = false
      const end = session.next(endOf(1))
      void end.then(
        () => {
          ended = true
        },
        () => {},
      )
      const startedAt = performance.now()
      // 8 KiB every 10 ms: the script takes well over a second.
      while (!ended && !session.socket.closed) {
        session.socket.write(Buffer.concat([windowUpdate(1, 8 * 1024), windowUpdate(0, 8 * 1024)]))
        await sleep(10)
      }
      const last = await end
      if (last.type === FrameType.RST_STREAM) assert.equal(code(last), ErrorCode.NO_ERROR)
      assert.ok(performance.now() - startedAt > REQUEST_TIMEOUT_MS)
      assert.ok(dataBytes(session, 1) > ASSET_BYTES_AT_LEAST, `${dataBytes(session, 1)} bytes`)
      session.socket.destroy()
      await session.closed
      const lines = assetLines(s)
      assert.equal(lines.length, 1)
      assert.equal('delivered' in lines[0]!, false)
    },
  )
})

storeIndependent(() => {
  describe('out of file descriptors', () => {
    const MAIN = fileURLToPath(new URL('../../dist/main.js', import.meta.url))
    const FILES = 128

    test(
      'connections past the file limit are closed as accepted, logged once, counted',
      GUARD,
      async (t) => {
        const env = {
          PETSTORE_METRICS_PORT: '0',
          PETSTORE_LOG_FORMAT: 'json',
          PETSTORE_REQUEST_TIMEOUT: '60s',
        }
        const service = await startService(t, {
          command: 'prlimit',
          args: [`--nofile=${FILES}`, process.execPath, MAIN, 'serve'],
          env,
        })
        const taken = FILES - SPARE_FILE_DESCRIPTORS
        const refused = 20
        const sockets: Socket[] = []
        t.after(() => {
          for (const socket of sockets) socket.destroy()
        })
        let closed = 0
        const allRefused = new Promise<void>((resolve) => {
          for (let i = 0; i < taken + refused; i++) {
            const socket = tcpConnect(service.port, '127.0.0.1')
            socket.on('error', () => {})
            socket.once('close', () => {
              if (++closed === refused) resolve()
            })
            sockets.push(socket)
          }
        })
        // The kernel completes every connection; the service keeps as many as its file limit allows
        // and closes the rest as it accepts them.
        await allRefused
        await service.waitFor(/out of file descriptors/)
        const scrape = await (await fetch(service.metricsUrl!)).text()
        assert.match(
          scrape,
          new RegExp(`^petstore_http_connections_refused_total ${refused}$`, 'm'),
        )
        const logged = service.logLines().filter((l) => /out of file descriptors/.test(l.msg))
        assert.equal(logged.length, 1, JSON.stringify(logged))
        assert.equal(logged[0]!.level, 50)
        assert.equal(logged[0]!.fileDescriptorLimit, FILES)
        assert.equal(logged[0]!.maxConnections, taken)
        // The connections kept are served.
        const kept = sockets.find((socket) => !socket.closed)!
        kept.write(get('/healthz'))
        const [answer] = (await once(kept, 'data')) as [Buffer]
        assert.match(answer.toString('latin1'), /^HTTP\/1\.1 200 /)
      },
    )
  })
})
