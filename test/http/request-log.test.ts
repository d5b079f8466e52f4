// The `request completed` line: one per request, through the request's own pino logger, with what
// an operator asks of it, a URL cut short, and `"delivered":false` for an answer cut short.
import assert from 'node:assert/strict'
import { once } from 'node:events'
import type { AddressInfo } from 'node:net'
import { connect } from 'node:net'
import { Readable } from 'node:stream'
import { describe, type TestContext, test } from 'node:test'
import { setTimeout as sleep } from 'node:timers/promises'
import Fastify from 'fastify'
import { configWith } from '../../src/config.js'
import { LOGGED_URL_MAX, loggedUrl, RequestLogController } from '../../src/http/request-log.js'
import '../../src/http/types.js'
import { loggerOptions } from '../../src/observability/logging.js'
import { storeIndependent } from '../support/stores.js'

/** A Fastify app with the service's logger options and log controller, its lines in `lines`. */
function appLogging(t: TestContext, lines: Record<string, unknown>[]) {
  const options = loggerOptions(configWith({ logLevel: 'info', logFormat: 'json' }), {
    isTTY: false,
  })
  const app = Fastify({
    logger: { ...options, stream: { write: (line: string) => lines.push(JSON.parse(line)) } },
    logController: new RequestLogController(),
  })
  app.setNotFoundHandler((_request, reply) => reply.code(404).send('none'))
  t.after(() => app.close())
  return app
}

storeIndependent(() => {
  describe('the request line', () => {
    test('one per request, its fields in order, the route its operation', async (t) => {
      const lines: Record<string, unknown>[] = []
      const app = appLogging(t, lines)
      app.get('/v1/pets/:id', { config: { operation: 'getPet' } }, async (request) => {
        request.apiKey = { id: 'k1', name: 'ci "bot"' }
        return 'ok'
      })
      const res = await app.inject({ method: 'GET', url: '/v1/pets/42', remoteAddress: '10.0.0.7' })
      assert.equal(res.statusCode, 200)
      await app.inject({ method: 'GET', url: '/nowhere' })
      assert.equal(lines.length, 2, JSON.stringify(lines))
      const [line, unmatched] = lines
      assert.deepEqual(Object.keys(line!), [
        'level',
        'time',
        'pid',
        'hostname',
        'requestId',
        'operation',
        'method',
        'url',
        'status',
        'durationMs',
        'apiKeyName',
        'remoteAddress',
        'msg',
      ])
      assert.deepEqual(
        { ...line, time: 0, pid: 0, hostname: '', requestId: '', durationMs: 0 },
        {
          level: 30,
          time: 0,
          pid: 0,
          hostname: '',
          requestId: '',
          operation: 'getPet',
          method: 'GET',
          url: '/v1/pets/42',
          status: 200,
          durationMs: 0,
          apiKeyName: 'ci "bot"',
          remoteAddress: '10.0.0.7',
          msg: 'request completed',
        },
      )
      assert.equal(typeof line!.requestId, 'string')
      const ms = line!.durationMs as number
      assert.ok(ms >= 0 && Math.round(ms * 100) / 100 === ms, String(ms))
      assert.equal(unmatched!.operation, 'unknown')
      assert.equal(unmatched!.status, 404)
      assert.notEqual(unmatched!.requestId, line!.requestId)
    })

    test('an error on the answer is a `request errored` line with the same fields', async (t) => {
      const lines: Record<string, unknown>[] = []
      const app = appLogging(t, lines)
      app.get('/broken', { config: { operation: 'broken' } }, async (_request, reply) => {
        reply.raw.emit('error', new Error('the socket broke'))
        return 'ok'
      })
      // light-my-request fails the injection with the answer's error.
      await assert.rejects(app.inject({ method: 'GET', url: '/broken' }), /the socket broke/)
      assert.equal(lines.length, 1, JSON.stringify(lines))
      const line = lines[0]!
      assert.equal(line.level, 50)
      assert.equal(line.msg, 'request errored')
      assert.deepEqual(
        [line.operation, line.method, line.url, line.status],
        ['broken', 'GET', '/broken', 200],
      )
      assert.equal(typeof line.requestId, 'string')
      assert.equal((line.err as { message: string }).message, 'the socket broke')
    })

    test('an HTTP/1 answer cut short says `"delivered":false` after its status, and no more', async (t) => {
      const lines: Record<string, unknown>[] = []
      const app = appLogging(t, lines)
      const chunk = Buffer.alloc(64 * 1024)
      const endless = function* () {
        for (;;) yield chunk
      }
      app.get('/endless', { config: { operation: 'endless' } }, async () =>
        Readable.from(endless()),
      )
      await app.listen({ port: 0, host: '127.0.0.1' })
      const ofRequests = () => lines.filter((l) => 'requestId' in l)
      const socket = connect((app.server.address() as AddressInfo).port, '127.0.0.1')
      socket.write('GET /endless HTTP/1.1\r\nHost: localhost\r\n\r\n')
      await once(socket, 'data')
      socket.destroy()
      for (let waited = 0; ofRequests().length === 0 && waited < 5000; waited += 10) await sleep(10)
      // Nor a line of its own for the stream closed early.
      await sleep(50)
      assert.deepEqual(
        ofRequests().map((l) => l.msg),
        ['request completed'],
      )
      const line = ofRequests()[0]!
      const keys = Object.keys(line)
      const at = keys.indexOf('status')
      assert.deepEqual(keys.slice(at, at + 3), ['status', 'delivered', 'durationMs'])
      assert.equal(line.status, 200)
      assert.equal(line.delivered, false)
    })
  })

  describe('the url of a request line', () => {
    test('a URL is cut after LOGGED_URL_MAX characters, never inside a surrogate pair', () => {
      const longUrl = `/${'A'.repeat(15_000)}?q=${'é'.repeat(100)}`
      assert.equal(
        loggedUrl(longUrl),
        `${longUrl.slice(0, LOGGED_URL_MAX)}…(${longUrl.length} characters)`,
      )
      const whole = `/${'b'.repeat(LOGGED_URL_MAX - 1)}`
      assert.equal(loggedUrl(whole), whole)
      const pair = `${'c'.repeat(LOGGED_URL_MAX - 1)}🐈${'d'.repeat(10)}`
      assert.equal(loggedUrl(pair), `${'c'.repeat(LOGGED_URL_MAX - 1)}…(${pair.length} characters)`)
    })

    test('through Fastify: a 15 KB URL makes a line under 1 KB', async (t) => {
      const raw: string[] = []
      const options = loggerOptions(configWith({ logLevel: 'info', logFormat: 'json' }), {
        isTTY: false,
      })
      const app = Fastify({
        logger: { ...options, stream: { write: (line: string) => raw.push(line) } },
        logController: new RequestLogController(),
      })
      t.after(() => app.close())
      app.get('/*', async () => 'ok')
      const res = await app.inject({ method: 'GET', url: `/${'A'.repeat(15_000)}` })
      assert.equal(res.statusCode, 200)
      assert.equal(raw.length, 1, raw.join(''))
      assert.ok(raw[0]!.length < 1024, `${raw[0]!.length} bytes`)
      const line = JSON.parse(raw[0]!)
      assert.equal(line.msg, 'request completed')
      assert.equal(line.url, `/${'A'.repeat(LOGGED_URL_MAX - 1)}…(15001 characters)`)
    })
  })
})
