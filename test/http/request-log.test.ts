// The fast lane's `request completed` lines (requestLineWriter) are written without pino's generic
// path, and must be the bytes pino itself writes for the same fields with the service's logger
// settings; with settings it does not know, it must leave the line to pino.
import assert from 'node:assert/strict'
import { describe, test } from 'node:test'
import Fastify, { type FastifyBaseLogger } from 'fastify'
import pino from 'pino'
import { configWith } from '../../src/config.js'
import {
  type CompletedRequest,
  durationText,
  LOGGED_URL_MAX,
  RequestLogController,
  requestLine,
  requestLineWriter,
} from '../../src/http/request-log.js'
import { loggerOptions } from '../../src/observability/logging.js'
import { storeIndependent } from '../support/stores.js'

/** A Fastify app's root logger writing to `lines`, with the service's options but for the stream. */
function appLogger(lines: string[], extra: Record<string, unknown> = {}): FastifyBaseLogger {
  const options = loggerOptions(configWith({ logLevel: 'info', logFormat: 'json' }), {
    isTTY: false,
  })
  const app = Fastify({
    logger: { ...options, ...extra, stream: { write: (line: string) => lines.push(line) } },
  })
  return app.log
}

/** Each line as pino wrote it, with the clock's reading left out. */
const timeless = (lines: string[]) => lines.map((l) => l.replace(/,"time":[^,]+,/, ',"time":T,'))

const requests: CompletedRequest[] = [
  {
    requestId: '2f1c0e0a-6a53-4d5e-9a57-6f0d2a0c9b11',
    operation: 'getPet',
    method: 'GET',
    url: '/v1/pets/42',
    status: 200,
    elapsedMs: 0.123456,
    apiKeyName: 'bench',
    remoteAddress: '127.0.0.1',
  },
  {
    requestId: 'req-1',
    operation: 'listPets',
    method: 'GET',
    url: '/v1/pets?limit=20&cursor=djE6OTAw',
    status: 200,
    elapsedMs: 12,
    apiKeyName: 'ops "north" \\ é 🐈',
    remoteAddress: '::ffff:10.0.0.7',
  },
  {
    requestId: undefined,
    operation: 'createPet',
    method: 'POST',
    url: undefined,
    status: 201,
    elapsedMs: 1.005,
    apiKeyName: `tab\there and a long name ${'x'.repeat(120)}`,
    remoteAddress: undefined,
  },
  {
    requestId: 'r',
    operation: 'createPet',
    method: 'POST',
    url: '/v1/pets',
    status: 500,
    elapsedMs: 0,
    apiKeyName: 'lone \ud800 half',
    remoteAddress: '192.0.2.1',
  },
]

/**
 * The order lines are written in: each request repeated, then back to earlier ones, so that the
 * writer's remembered fields (a field like the last line's) are both reused and replaced.
 */
const sequence = [...requests, requests[3]!, ...[...requests].reverse(), ...requests]

/** Writes every request of `sequence` with the writer and with pino, and returns both sets of lines. */
function bothWays(extra: Record<string, unknown> = {}) {
  const fast: string[] = []
  const slow: string[] = []
  const fastLogger = appLogger(fast, extra)
  let viaInfo = 0
  const info = fastLogger.info.bind(fastLogger)
  fastLogger.info = ((...args: Parameters<typeof info>) => {
    viaInfo++
    info(...args)
  }) as typeof fastLogger.info
  const write = requestLineWriter(fastLogger)
  const slowLogger = appLogger(slow, extra)
  for (const r of sequence) {
    write(r)
    slowLogger.info(requestLine(r), 'request completed')
  }
  return { fast, slow, viaInfo }
}

storeIndependent(() => {
  describe('the fast lane request line', () => {
    test("is written without pino's generic path, byte for byte as pino writes it", () => {
      const { fast, slow, viaInfo } = bothWays()
      assert.equal(viaInfo, 0)
      assert.equal(fast.length, sequence.length)
      assert.deepEqual(timeless(fast), timeless(slow))
      for (const line of fast) assert.match(line, /^\{"level":30,"time":\d{13},"pid":\d+,/)
      // pino-pretty and log shippers read these lines as JSON.
      assert.equal(JSON.parse(fast[1]!).apiKeyName, 'ops "north" \\ é 🐈')
    })

    test('is left to pino when the logger formats otherwise, and still the same line', () => {
      for (const extra of [
        { timestamp: pino.stdTimeFunctions.isoTime },
        { mixin: () => ({ region: 'eu' }) },
        { formatters: { level: (label: string) => ({ level: label }) } },
        { messageKey: 'message' },
      ]) {
        const { fast, slow, viaInfo } = bothWays(extra)
        assert.equal(viaInfo, sequence.length, JSON.stringify(Object.keys(extra)))
        assert.deepEqual(timeless(fast), timeless(slow))
      }
    })

    test('writes nothing when info is off', () => {
      const { fast } = bothWays({ level: 'warn' })
      assert.deepEqual(fast, [])
    })

    test('writes durationMs as the number it is: what String() writes for it, for every value', () => {
      const asNumber = (ms: number) => String(Math.round(ms * 100) / 100)
      const values = [0, 0.004, 0.005, 0.994999, 0.995, 1, 1.005, 1.1, 10.01, 99.999, 1e7 + 0.07]
      for (let h = 0; h <= 300_000; h++) values.push(h / 100, h / 100 + 0.0049, h / 100 - 0.0049)
      for (let i = 0; i < 100_000; i++)
        values.push(Math.random() * 10 ** Math.floor(Math.random() * 8))
      values.push(2 ** 29, 2 ** 30, 1e12 + 0.5, Number.NaN)
      for (const ms of values) assert.equal(durationText(ms), asNumber(ms), String(ms))
    })
  })

  describe('the url of a request line', () => {
    const longUrl = `/${'A'.repeat(15_000)}?q=${'é'.repeat(100)}`
    const cut = `${longUrl.slice(0, LOGGED_URL_MAX)}…(${longUrl.length} characters)`

    test('a 15 KB URL is cut to its start and its length, the same bytes on both paths', () => {
      const fast: string[] = []
      const slow: string[] = []
      const write = requestLineWriter(appLogger(fast))
      const slowLogger = appLogger(slow)
      const r: CompletedRequest = { ...requests[0]!, url: longUrl }
      write(r)
      slowLogger.info(requestLine(r), 'request completed')
      assert.deepEqual(timeless(fast), timeless(slow))
      assert.ok(fast[0]!.length < 1024, `${fast[0]!.length} bytes`)
      assert.equal(JSON.parse(fast[0]!).url, cut)
      // A URL of the limit's length is kept whole, and so is a pair of surrogates at the cut.
      const whole = `/${'b'.repeat(LOGGED_URL_MAX - 1)}`
      assert.equal(requestLine({ ...r, url: whole }).url, whole)
      const pair = `${'c'.repeat(LOGGED_URL_MAX - 1)}🐈${'d'.repeat(10)}`
      assert.equal(
        requestLine({ ...r, url: pair }).url,
        `${'c'.repeat(LOGGED_URL_MAX - 1)}…(${pair.length} characters)`,
      )
    })

    test('through Fastify too: a 15 KB URL makes a line under 1 KB', async () => {
      const lines: string[] = []
      const options = loggerOptions(configWith({ logLevel: 'info', logFormat: 'json' }), {
        isTTY: false,
      })
      const app = Fastify({
        logger: { ...options, stream: { write: (line: string) => lines.push(line) } },
        logController: new RequestLogController(),
      })
      app.get('/*', async () => 'ok')
      const res = await app.inject({ method: 'GET', url: `/${'A'.repeat(15_000)}` })
      assert.equal(res.statusCode, 200)
      await app.close()
      assert.equal(lines.length, 1, lines.join(''))
      assert.ok(lines[0]!.length < 1024, `${lines[0]!.length} bytes`)
      assert.equal(JSON.parse(lines[0]!).msg, 'request completed')
      assert.equal(
        JSON.parse(lines[0]!).url,
        `/${'A'.repeat(LOGGED_URL_MAX - 1)}…(15001 characters)`,
      )
    })
  })
})
