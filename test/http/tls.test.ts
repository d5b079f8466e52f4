// The service speaking TLS itself: HTTPS, HTTP/2 with HTTP/1.1 fallback, HSTS, and the error and
// drain paths under both, on real sockets with a self-signed certificate made by openssl here.
import assert from 'node:assert/strict'
import { once } from 'node:events'
import { existsSync, writeFileSync } from 'node:fs'
import type { IncomingHttpHeaders, OutgoingHttpHeaders } from 'node:http'
import http2, { type ClientHttp2Session, type IncomingHttpStatusHeader } from 'node:http2'
import https from 'node:https'
import { join } from 'node:path'
import { describe, type TestContext, test } from 'node:test'
import tls, { type TLSSocket } from 'node:tls'
import { ConfigError, configWith, loadConfig } from '../../src/config.js'
import { loadTls } from '../../src/http/tls.js'
import { tempDir, testApp } from '../support/app.js'
import { badRequest, NO_KEY } from '../support/errors.js'
import { LISTENING_LINE, spawnService, startService } from '../support/process.js'
import { storeIndependent } from '../support/stores.js'
import { certificate, makeCertificate, tlsServer } from '../support/tls.js'

const HSTS = 'max-age=600'
const MALFORMED_URL = badRequest('the request URL is malformed')
/** Where a missing GOAWAY or close would leave a wait hanging, the test fails instead. */
const HANG_GUARD = { timeout: 30_000 }
const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/

interface Answer {
  status: number
  headers: IncomingHttpHeaders
  body: string
  httpVersion: string
  alpn: string | false | null
}

/** One HTTP/1.1 request over TLS on its own connection, trusting only the test certificate. */
function httpsRequest(
  origin: string,
  path: string,
  opts: {
    method?: string
    headers?: OutgoingHttpHeaders
    body?: string
    alpn?: string[]
    agent?: https.Agent
  } = {},
): Promise<Answer> {
  // The options reach tls.connect, which takes ALPNProtocols; https' types leave it out.
  const options: https.RequestOptions & Pick<tls.ConnectionOptions, 'ALPNProtocols'> = {
    method: opts.method ?? 'GET',
    headers: opts.headers,
    ca: certificate().cert,
    ALPNProtocols: opts.alpn,
    agent: opts.agent ?? false,
  }
  return new Promise((resolve, reject) => {
    const req = https.request(new URL(path, origin), options, (res) => {
      const alpn = (res.socket as TLSSocket).alpnProtocol
      let body = ''
      res.setEncoding('utf8')
      res.on('data', (chunk: string) => {
        body += chunk
      })
      res.on('end', () =>
        resolve({
          status: res.statusCode!,
          headers: res.headers,
          body,
          httpVersion: res.httpVersion,
          alpn,
        }),
      )
    })
    req.on('error', reject)
    req.end(opts.body)
  })
}

async function h2Connect(t: TestContext, origin: string): Promise<ClientHttp2Session> {
  const session = http2.connect(origin, { ca: certificate().cert })
  t.after(() => session.destroy())
  await once(session, 'connect')
  return session
}

interface H2Answer {
  headers: IncomingHttpHeaders & IncomingHttpStatusHeader
  body: string
}

function h2Request(
  session: ClientHttp2Session,
  headers: OutgoingHttpHeaders,
  body?: string,
): Promise<H2Answer> {
  return new Promise((resolve, reject) => {
    const stream = session.request(headers, { endStream: body === undefined })
    let responseHeaders: H2Answer['headers'] | undefined
    let text = ''
    stream.setEncoding('utf8')
    stream.on('response', (h) => {
      responseHeaders = h
    })
    stream.on('data', (chunk: string) => {
      text += chunk
    })
    stream.on('end', () => resolve({ headers: responseHeaders!, body: text }))
    stream.on('error', reject)
    if (body !== undefined) stream.end(body)
  })
}

/** Raw bytes over TLS without ALPN (so HTTP/1.1), for requests the HTTP parser rejects. */
function rawTlsRequest(port: number, text: string): Promise<string> {
  return new Promise((resolve, reject) => {
    const socket = tls.connect({ port, host: '127.0.0.1', ca: certificate().cert }, () =>
      socket.write(text),
    )
    let received = ''
    socket.setEncoding('utf8')
    socket.on('data', (chunk: string) => {
      received += chunk
    })
    socket.on('end', () => resolve(received))
    socket.on('error', reject)
  })
}

/** A request line that is no HTTP, over TLS: 400 with the Error body, and HSTS. */
async function assertMalformedAnswered(port: number): Promise<void> {
  const raw = parseRaw(await rawTlsRequest(port, 'NOT A REQUEST\r\n\r\n'))
  assert.equal(raw.status, 400)
  assert.deepEqual(JSON.parse(raw.body), badRequest('malformed HTTP request'))
  assert.equal(raw.headers['strict-transport-security'], HSTS)
}

function parseRaw(text: string) {
  const [head = '', body = ''] = text.split('\r\n\r\n')
  const [statusLine = '', ...lines] = head.split('\r\n')
  const headers: Record<string, string> = {}
  for (const line of lines) {
    const i = line.indexOf(':')
    headers[line.slice(0, i).toLowerCase()] = line.slice(i + 1).trim()
  }
  return { status: Number(statusLine.split(' ')[1]), headers, body }
}

describe('HTTPS (HTTP/1.1 over TLS)', () => {
  test('a list answers over TLS with HSTS, X-Request-Id and Cache-Control', async (t) => {
    const s = await tlsServer(t, { http2: false })
    const res = await httpsRequest(s.origin, '/v1/pets', {
      headers: { authorization: `Bearer ${s.key}`, 'x-request-id': 'tls-1' },
    })
    assert.equal(res.status, 200)
    assert.equal(res.body, '[]')
    assert.equal(res.httpVersion, '1.1')
    assert.equal(res.headers['strict-transport-security'], HSTS)
    assert.equal(res.headers['x-request-id'], 'tls-1')
    assert.equal(res.headers['cache-control'], 'no-store')
  })

  test('create and get round trip; links use https', async (t) => {
    const s = await tlsServer(t, { http2: false })
    const auth = { authorization: `Bearer ${s.key}`, 'content-type': 'application/json' }
    const created = await httpsRequest(s.origin, '/v1/pets', {
      method: 'POST',
      headers: auth,
      body: '{"name":"Rex","categoryId":9223372036854775807,"status":"available"}',
    })
    assert.equal(created.status, 201)
    assert.equal(
      created.body,
      '{"id":1,"name":"Rex","categoryId":9223372036854775807,"status":"available"}',
    )
    assert.equal(created.headers.location, '/v1/pets/1')
    assert.equal(created.headers['strict-transport-security'], HSTS)

    const got = await httpsRequest(s.origin, '/v1/pets/1', { headers: auth })
    assert.equal(got.status, 200)
    assert.equal(got.body, created.body)
    assert.equal(got.headers.sunset, 'Thu, 05 Dec 2030 00:00:00 GMT')
    assert.equal(got.headers['strict-transport-security'], HSTS)

    await httpsRequest(s.origin, '/v1/pets', {
      method: 'POST',
      headers: auth,
      body: '{"name":"Tom","categoryId":2}',
    })
    const page = await httpsRequest(s.origin, '/v1/pets?limit=1', { headers: auth })
    assert.equal(page.status, 200)
    assert.match(
      String(page.headers.link),
      new RegExp(
        `^<https://127\\.0\\.0\\.1:${s.port}/v1/pets\\?limit=1&cursor=[^>]+>; rel="next"$`,
      ),
    )
  })

  test('a list and a get over TLS, each sent twice, are answered in full the same both times', async (t) => {
    const s = await tlsServer(t, { http2: false })
    const auth = { authorization: `Bearer ${s.key}`, 'content-type': 'application/json' }
    for (const name of ['Rex', 'Tom']) {
      const body = `{"name":"${name}","categoryId":2}`
      const created = await httpsRequest(s.origin, '/v1/pets', {
        method: 'POST',
        headers: auth,
        body,
      })
      assert.equal(created.status, 201)
    }
    const cases = [
      {
        path: '/v1/pets?limit=1',
        body: '[{"id":1,"name":"Rex","categoryId":2}]',
        own: { link: `<https://127.0.0.1:${s.port}/v1/pets?limit=1&cursor=djE6MQ>; rel="next"` },
      },
      {
        path: '/v1/pets/2',
        body: '{"id":2,"name":"Tom","categoryId":2}',
        own: {
          deprecation: '@1764892800',
          sunset: 'Thu, 05 Dec 2030 00:00:00 GMT',
          link: '</v1/pets>; rel="successor-version"',
        },
      },
    ]
    // Each request spends one of the window's 6000; the seconds left move with the clock.
    let left = 5998
    for (const { path, body, own } of cases) {
      for (const round of [1, 2]) {
        const headers = { authorization: `Bearer ${s.key}`, 'x-request-id': 'tls-repeat' }
        const res = await httpsRequest(s.origin, path, { headers })
        const { date, ...rest } = res.headers
        const label = `${path} (round ${round})`
        assert.equal(res.status, 200, label)
        assert.equal(res.body, body, label)
        assert.match(String(date), / GMT$/, label)
        assert.deepEqual(
          { ...rest, ratelimit: String(rest.ratelimit).replace(/;t=\d+$/, ';t=T') },
          {
            'x-request-id': 'tls-repeat',
            'cache-control': 'no-store',
            'strict-transport-security': HSTS,
            ...own,
            'ratelimit-policy': '"default";q=6000;w=60',
            ratelimit: `"default";r=${--left};t=T`,
            'content-type': 'application/json; charset=utf-8',
            'content-length': String(Buffer.byteLength(body)),
            connection: 'close',
          },
          label,
        )
      }
    }
  })

  test('a 401 Error body over TLS carries HSTS', async (t) => {
    const s = await tlsServer(t, { http2: false })
    const res = await httpsRequest(s.origin, '/v1/pets')
    assert.equal(res.status, 401)
    assert.deepEqual(JSON.parse(res.body), NO_KEY)
    assert.equal(res.headers['www-authenticate'], 'Bearer realm="petstore"')
    assert.equal(res.headers['strict-transport-security'], HSTS)
    assert.match(String(res.headers['x-request-id']), UUID)
  })

  test('errors before routing still get an Error body and HSTS over TLS', async (t) => {
    const s = await tlsServer(t, { http2: false })
    await assertMalformedAnswered(s.port)

    const url = await httpsRequest(s.origin, '/v1/pets/%E0%A4%A', {
      headers: { authorization: `Bearer ${s.key}` },
    })
    assert.equal(url.status, 400)
    assert.deepEqual(JSON.parse(url.body), MALFORMED_URL)
    assert.equal(url.headers['strict-transport-security'], HSTS)
  })
})

describe('HTTP/2', () => {
  test('negotiates h2 by ALPN and answers with exact bodies, HSTS and X-Request-Id', async (t) => {
    const s = await tlsServer(t, { http2: true })
    const session = await h2Connect(t, s.origin)
    assert.equal(session.alpnProtocol, 'h2')
    const res = await h2Request(session, {
      ':path': '/v1/pets',
      authorization: `Bearer ${s.key}`,
      'x-request-id': 'h2-1',
    })
    assert.equal(res.headers[':status'], 200)
    assert.equal(res.body, '[]')
    assert.equal(res.headers['strict-transport-security'], HSTS)
    assert.equal(res.headers['x-request-id'], 'h2-1')
    assert.equal(res.headers['cache-control'], 'no-store')
    assert.equal(res.headers['ratelimit-policy'], '"default";q=6000;w=60')
    assert.equal(res.headers.connection, undefined)
  })

  test('create and get round trip over one HTTP/2 session', async (t) => {
    const s = await tlsServer(t, { http2: true })
    const session = await h2Connect(t, s.origin)
    const created = await h2Request(
      session,
      {
        ':method': 'POST',
        ':path': '/v1/pets',
        authorization: `Bearer ${s.key}`,
        'content-type': 'application/json',
        'idempotency-key': 'h2-create',
      },
      '{"name":"Rex","categoryId":9007199254740993}',
    )
    assert.equal(created.headers[':status'], 201)
    assert.equal(created.body, '{"id":1,"name":"Rex","categoryId":9007199254740993}')
    assert.equal(created.headers.location, '/v1/pets/1')
    assert.equal(created.headers['strict-transport-security'], HSTS)

    const got = await h2Request(session, {
      ':path': '/v1/pets/1',
      authorization: `Bearer ${s.key}`,
    })
    assert.equal(got.headers[':status'], 200)
    assert.equal(got.body, created.body)
    assert.equal(got.headers.deprecation, '@1764892800')
  })

  test('Error bodies over HTTP/2: 401, 404 and a malformed URL, each with HSTS', async (t) => {
    const s = await tlsServer(t, { http2: true })
    const session = await h2Connect(t, s.origin)
    const unauthorized = await h2Request(session, { ':path': '/v1/pets' })
    assert.equal(unauthorized.headers[':status'], 401)
    assert.deepEqual(JSON.parse(unauthorized.body), NO_KEY)
    assert.equal(unauthorized.headers['www-authenticate'], 'Bearer realm="petstore"')
    assert.equal(unauthorized.headers['strict-transport-security'], HSTS)
    assert.match(String(unauthorized.headers['x-request-id']), UUID)

    const missing = await h2Request(session, {
      ':path': '/v1/pets/42',
      authorization: `Bearer ${s.key}`,
    })
    assert.equal(missing.headers[':status'], 404)
    assert.deepEqual(JSON.parse(missing.body), {
      code: 'not_found',
      message: 'no pet with id 42',
      status: 404,
    })
    assert.equal(missing.headers['strict-transport-security'], HSTS)

    const malformed = await h2Request(session, {
      ':path': '/v1/pets/%E0%A4%A',
      authorization: `Bearer ${s.key}`,
    })
    assert.equal(malformed.headers[':status'], 400)
    assert.deepEqual(JSON.parse(malformed.body), MALFORMED_URL)
    assert.equal(malformed.headers['strict-transport-security'], HSTS)
  })

  test('an HTTP/1.1 client falls back on the same port', async (t) => {
    const s = await tlsServer(t, { http2: true })
    const res = await httpsRequest(s.origin, '/v1/pets', {
      headers: { authorization: `Bearer ${s.key}` },
      alpn: ['http/1.1'],
    })
    assert.equal(res.alpn, 'http/1.1')
    assert.equal(res.httpVersion, '1.1')
    assert.equal(res.status, 200)
    assert.equal(res.body, '[]')
    assert.equal(res.headers['strict-transport-security'], HSTS)

    // A client offering no ALPN at all is served HTTP/1.1 too, and so are its parse errors.
    await assertMalformedAnswered(s.port)
  })

  test('draining: a GOAWAY on HTTP/2, Connection: close on HTTP/1.1', HANG_GUARD, async (t) => {
    const s = await tlsServer(t, { http2: true, isDraining: () => true })
    const session = await h2Connect(t, s.origin)
    const goaway = once(session, 'goaway')
    const res = await h2Request(session, { ':path': '/v1/pets', authorization: `Bearer ${s.key}` })
    assert.equal(res.headers[':status'], 200)
    assert.equal(res.body, '[]')
    assert.equal(res.headers.connection, undefined)
    await goaway

    const fallback = await httpsRequest(s.origin, '/v1/pets', {
      headers: { authorization: `Bearer ${s.key}` },
      alpn: ['http/1.1'],
    })
    assert.equal(fallback.status, 200)
    assert.equal(fallback.headers.connection, 'close')
  })

  test('closing ends idle HTTP/2 sessions and HTTP/1.1 connections', HANG_GUARD, async (t) => {
    const s = await tlsServer(t, { http2: true })
    const session = await h2Connect(t, s.origin)
    const sessionClosed = once(session, 'close')
    const first = await h2Request(session, { ':path': '/healthz' })
    assert.equal(first.headers[':status'], 200)
    const agent = new https.Agent({ keepAlive: true })
    t.after(() => agent.destroy())
    const kept = await httpsRequest(s.origin, '/healthz', { agent, alpn: ['http/1.1'] })
    assert.equal(kept.status, 200)
    assert.equal(kept.headers.connection, 'keep-alive')
    // Both connections stay open and idle; close must not wait for them to time out.
    await s.close()
    await sessionClosed
    assert.equal(session.closed, true)
  })
})

describe('plain HTTP', () => {
  test('no Strict-Transport-Security without TLS', async (t) => {
    const a = await testApp(t)
    await a.app.listen({ port: 0, host: '127.0.0.1' })
    const port = (a.app.server.address() as { port: number }).port
    const ok = await fetch(`http://127.0.0.1:${port}/v1/pets`, {
      headers: { authorization: `Bearer ${a.key}` },
    })
    assert.equal(ok.status, 200)
    assert.equal(await ok.text(), '[]')
    assert.equal(ok.headers.get('strict-transport-security'), null)
    const refused = await fetch(`http://127.0.0.1:${port}/v1/pets`)
    assert.equal(refused.status, 401)
    assert.deepEqual(await refused.json(), NO_KEY)
    assert.equal(refused.headers.get('strict-transport-security'), null)
  })
})

/** `fn` throws a ConfigError with exactly these problems. */
function assertProblems(fn: () => unknown, problems: string[]): void {
  assert.throws(fn, (err: unknown) => {
    assert.ok(err instanceof ConfigError)
    assert.deepEqual(err.problems, problems)
    return true
  })
}

storeIndependent(() => {
  describe('TLS settings', () => {
    test('only one of certificate and key is a configuration error', () => {
      for (const env of [{ PETSTORE_TLS_CERT: 'cert.pem' }, { PETSTORE_TLS_KEY: 'key.pem' }]) {
        assertProblems(
          () => loadConfig(env, null),
          ['PETSTORE_TLS_CERT and PETSTORE_TLS_KEY must be set together'],
        )
      }
    })

    test('HTTP/2 without TLS is a configuration error', () => {
      assertProblems(
        () => loadConfig({ PETSTORE_HTTP2: 'true' }, null),
        ['PETSTORE_HTTP2=true needs PETSTORE_TLS_CERT and PETSTORE_TLS_KEY'],
      )
    })

    test('without a certificate and key there is no TLS material', () => {
      assert.equal(loadTls(configWith()), undefined)
    })

    test('unreadable files are named by their setting', (t) => {
      const dir = tempDir(t)
      const cert = join(dir, 'missing-cert.pem')
      const key = join(dir, 'missing-key.pem')
      assertProblems(
        () => loadTls(configWith({ tlsCertPath: cert, tlsKeyPath: certificate().keyPath })),
        [`PETSTORE_TLS_CERT=${JSON.stringify(cert)} cannot be read (ENOENT): expected a PEM file`],
      )
      assertProblems(
        () => loadTls(configWith({ tlsCertPath: cert, tlsKeyPath: key })),
        [
          `PETSTORE_TLS_CERT=${JSON.stringify(cert)} cannot be read (ENOENT): expected a PEM file`,
          `PETSTORE_TLS_KEY=${JSON.stringify(key)} cannot be read (ENOENT): expected a PEM file`,
        ],
      )
    })

    test('a key of another certificate, or a file that is no PEM, stops the start', (t) => {
      const other = makeCertificate()
      const notPem = join(tempDir(t), 'not.pem')
      writeFileSync(notPem, 'not a certificate\n')
      const cases = [
        { tlsCertPath: certificate().certPath, tlsKeyPath: other.keyPath },
        { tlsCertPath: notPem, tlsKeyPath: certificate().keyPath },
      ]
      for (const paths of cases) {
        assert.throws(
          () => loadTls(configWith(paths)),
          (err: unknown) => {
            assert.ok(err instanceof ConfigError)
            assert.equal(err.problems.length, 1)
            assert.match(
              err.problems[0]!,
              /^PETSTORE_TLS_CERT and PETSTORE_TLS_KEY do not make a usable certificate and key: ./,
            )
            return true
          },
        )
      }
    })
  })
})

storeIndependent(() => {
  describe('the petstore command with TLS settings', () => {
    test('serves HTTPS and HTTP/2 from PETSTORE_TLS_* and exits 0 on SIGTERM', async (t) => {
      const { certPath, keyPath } = certificate()
      const apiKey = 'tls-test-key-0123456789'
      const server = await startService(t, {
        env: {
          PETSTORE_TLS_CERT: certPath,
          PETSTORE_TLS_KEY: keyPath,
          PETSTORE_HTTP2: 'true',
          PETSTORE_HSTS_MAX_AGE: '600',
          PETSTORE_API_KEYS: apiKey,
        },
      })
      const origin = server.origin
      assert.match(origin, /^https:\/\/127\.0\.0\.1:\d+$/)

      const session = await h2Connect(t, origin)
      assert.equal(session.alpnProtocol, 'h2')
      const created = await h2Request(
        session,
        {
          ':method': 'POST',
          ':path': '/v1/pets',
          authorization: `Bearer ${apiKey}`,
          'content-type': 'application/json',
        },
        '{"name":"Rex","categoryId":7}',
      )
      assert.equal(created.headers[':status'], 201)
      assert.equal(created.body, '{"id":1,"name":"Rex","categoryId":7}')
      assert.equal(created.headers['strict-transport-security'], HSTS)

      const listed = await httpsRequest(origin, '/v1/pets', {
        headers: { authorization: `Bearer ${apiKey}` },
      })
      assert.equal(listed.status, 200)
      assert.equal(listed.httpVersion, '1.1')
      assert.equal(listed.body, '[{"id":1,"name":"Rex","categoryId":7}]')
      assert.equal(listed.headers['strict-transport-security'], HSTS)

      // The session stays open through the drain: the exit must not wait for it.
      server.child.kill('SIGTERM')
      assert.deepEqual(await server.exited, { code: 0, signal: null })
    })

    test('an unreadable certificate stops the start with exit code 2, before any database', async (t) => {
      const missing = '/nonexistent/petstore/cert.pem'
      const server = spawnService(t, {
        env: { PETSTORE_TLS_CERT: missing, PETSTORE_TLS_KEY: certificate().keyPath },
      })
      await assert.rejects(server.waitFor(LISTENING_LINE))
      assert.deepEqual(await server.exited, { code: 2, signal: null })
      assert.equal(server.stdout(), '')
      assert.equal(
        server.stderr(),
        `petstore: invalid configuration:\n  PETSTORE_TLS_CERT="${missing}" cannot be read (ENOENT): expected a PEM file\n`,
      )
      assert.equal(existsSync(join(server.cwd, 'petstore.db')), false)
    })

    test('HTTP/2 without a certificate is refused with exit code 2', async (t) => {
      const server = spawnService(t, { env: { PETSTORE_HTTP2: 'true' } })
      await assert.rejects(server.waitFor(LISTENING_LINE))
      assert.deepEqual(await server.exited, { code: 2, signal: null })
      assert.equal(
        server.stderr(),
        'petstore: invalid configuration:\n  PETSTORE_HTTP2=true needs PETSTORE_TLS_CERT and PETSTORE_TLS_KEY\n',
      )
    })
  })
})
