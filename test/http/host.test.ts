// Host, :authority and media-type parameters on real sockets: generated Host values and
// Content-Type parameter lists, each answered exactly as the rules say; HTTP/2 requests whose Host
// and :authority disagree.
import assert from 'node:assert/strict'
import { once } from 'node:events'
import type { OutgoingHttpHeaders } from 'node:http'
import http2, { type ClientHttp2Session } from 'node:http2'
import { describe, type TestContext, test } from 'node:test'
import fc from 'fast-check'
import { badRequest, errorBody } from '../support/errors.js'
import { exchange, header, type RawAnswer, rawRequest } from '../support/raw-http.js'
import { type Served, servedApp } from '../support/served-app.js'
import { certificate, tlsServer } from '../support/tls.js'

const HOST_RULE =
  'must be a host name, an IPv4 address or a bracketed IPv6 address, with an optional port from 1 to 65535'
const badHost = badRequest(`the Host header ${HOST_RULE}`)
const badAuthority = badRequest(`:authority ${HOST_RULE}`)
const disagreeing = badRequest('the Host header and :authority must name the same host and port')
const unsupported = errorBody(
  415,
  'unsupported_media_type',
  'request body must be UTF-8 application/json',
)
const NEXT = '/v1/pets?limit=1&cursor=djE6MQ'
const FIRST_PAGE = '[{"id":1,"name":"Ada","categoryId":1}]'
const RATE_LIMIT: [string, string][] = [
  ['ratelimit-policy', '"default";q=1000000;w=60'],
  ['ratelimit', '"default";r=N;t=T'],
]

async function one(port: number, bytes: string): Promise<RawAnswer> {
  const x = await exchange(port, bytes)
  assert.equal(x.answers.length, 1, `no answer: ${x.error ?? ''} ${x.rest}`)
  return x.answers[0]!
}

/** The answer without Date, and without the rate-limit window's count and seconds, which move. */
const exact = (a: RawAnswer): RawAnswer => ({
  status: a.status,
  headers: a.headers
    .filter(([n]) => n !== 'date')
    .map(([n, v]): [string, string] => [
      n,
      n === 'ratelimit' ? v.replace(/;r=\d+;t=\d+$/, ';r=N;t=T') : v,
    ]),
  body: a.body,
})

/** A JSON answer on a connection kept alive, as `exact` gives it: `headers` after Cache-Control. */
function expected(
  status: number,
  requestId: string,
  headers: [string, string][],
  body: string,
): RawAnswer {
  return {
    status,
    headers: [
      ['x-request-id', requestId],
      ['cache-control', 'no-store'],
      ...headers,
      ['content-type', 'application/json; charset=utf-8'],
      ['content-length', String(Buffer.byteLength(body))],
      ['connection', 'keep-alive'],
      ['keep-alive', 'timeout=72'],
    ],
    body,
  }
}

/** The app, with a rate limit no test reaches. */
const served = (t: TestContext) => servedApp(t, { rateLimitMax: 1_000_000 })

/** The app with three pets, so that `GET /v1/pets?limit=1` has a next page. */
async function listing(t: TestContext): Promise<Served> {
  const d = await served(t)
  for (const name of ['Ada', 'Bo', 'Cy']) {
    const created = await one(d.port, createRequest(d.key, 'application/json', name))
    assert.equal(created.status, 201)
  }
  return d
}

function listRequest(key: string, host: string): string {
  return rawRequest('GET', '/v1/pets?limit=1', [
    ['Host', host],
    ['Authorization', `Bearer ${key}`],
    ['X-Request-Id', 'host-1'],
  ])
}

function createRequest(key: string, contentType: string, name = 'Rex'): string {
  return rawRequest(
    'POST',
    '/v1/pets',
    [
      ['Host', 'svc.test'],
      ['Authorization', `Bearer ${key}`],
      ['Content-Type', contentType],
      ['X-Request-Id', 'create-1'],
    ],
    JSON.stringify({ name, categoryId: 1 }),
  )
}

/** Sends the list; a valid Host is the Link's origin, an invalid one is 400, each answer whole. */
async function assertHost(d: Served, host: string, valid: boolean): Promise<void> {
  const answer = await one(d.port, listRequest(d.key, host))
  const label = JSON.stringify(host)
  if (valid) {
    assert.equal(answer.status, 200, `${label}: ${answer.body}`)
    const link = `<http://${host}${NEXT}>; rel="next"`
    assert.equal(header(answer, 'link'), link, label)
    const headers: [string, string][] = [...RATE_LIMIT, ['link', link]]
    assert.deepEqual(exact(answer), expected(200, 'host-1', headers, FIRST_PAGE), label)
  } else {
    assert.equal(answer.status, 400, label)
    assert.deepEqual(JSON.parse(answer.body), badHost, label)
    assert.deepEqual(exact(answer), expected(400, 'host-1', [], JSON.stringify(badHost)), label)
  }
}

const nameChar = fc.constantFrom(...'abcxyzABCXYZ0123456789_')
const label = fc
  .tuple(nameChar, fc.string({ unit: fc.constantFrom(...'az09_-'), maxLength: 18 }), nameChar)
  .map(([first, middle, last]) => `${first}${middle}${last}`)
/** A last label that is not a number. */
const lastLabel = fc.tuple(fc.constantFrom(...'aqzAQZ_'), label).map(([l, rest]) => `${l}${rest}`)
const hostName = fc
  .tuple(fc.array(label, { maxLength: 3 }), lastLabel, fc.boolean())
  .map(([labels, last, dot]) => `${[...labels, last].join('.')}${dot ? '.' : ''}`)
const port = fc.integer({ min: 1, max: 65535 }).map(String)
const withPort = (host: fc.Arbitrary<string>) =>
  fc
    .tuple(host, fc.option(port, { nil: undefined }))
    .map(([h, p]) => (p === undefined ? h : `${h}:${p}`))
const validHost = withPort(
  fc.oneof(
    hostName,
    fc.ipV4(),
    fc.ipV6().map((a) => `[${a}]`),
    fc.constantFrom('localhost', 'a', '_svc.internal', 'x'.repeat(63), 'A.B-C.d_e'),
  ),
)
/** Each is invalid whatever it is built from. */
const invalidHost = fc.oneof(
  fc
    .tuple(hostName, fc.constantFrom('0', '00000', '65536', '99999', '123456', '', '8x', '+80'))
    .map(([h, p]) => `${h}:${p}`),
  fc
    .tuple(hostName, fc.constantFrom(...'!$&\'()*+,;=@/?#%~"<>[]{}|\\^`é'))
    .map(([h, c]) => `${h.slice(0, 1)}${c}${h.slice(1)}`),
  fc.tuple(label, label).map(([a, b]) => `-${a}.${b}x`),
  fc.tuple(label, label).map(([a, b]) => `${a}x-.${b}x`),
  fc.tuple(label, fc.nat(999)).map(([a, n]) => `${a}.${n}`),
  fc.ipV4().map((a) => `${a}.1`),
  fc.ipV4().map((a) => `[${a}]`),
  fc.ipV6().map((a) => `${a}:80`),
  fc.ipV6().map((a) => `[${a}`),
  fc.constantFrom(
    '-evil',
    '127.0.0.1:99999',
    '1.2.3.256',
    '01.2.3.4',
    '0x7f.1',
    '123',
    'a..b',
    '.a',
    'a.com:80:80',
    'user@a.com',
    '[fe80::1%25eth0]',
    '[v1.x]',
    '[::1]x',
    '[::1]:',
    `${'x'.repeat(64)}.test`,
    `${'abcd.'.repeat(51)}x`,
    '',
  ),
)

describe('Host is host[:port]', () => {
  test('the examples: an out-of-range port, a leading hyphen, no Host on HTTP/1.0', async (t) => {
    const d = await listing(t)
    await assertHost(d, '127.0.0.1:99999', false)
    await assertHost(d, '-evil', false)
    await assertHost(d, 'petstore.test:8080', true)
    await assertHost(d, '[::1]:8080', true)
    // A request that names no host gets the configured origin in its Link.
    const old = await one(
      d.port,
      `GET /v1/pets?limit=1 HTTP/1.0\r\nAuthorization: Bearer ${d.key}\r\n\r\n`,
    )
    assert.equal(old.status, 200)
    assert.equal(header(old, 'link'), `<https://petstore.example.com${NEXT}>; rel="next"`)
    assert.equal(old.body, FIRST_PAGE)
  })

  test('generated Host values: a valid one is the Link’s origin, an invalid one is 400', async (t) => {
    const d = await listing(t)
    await fc.assert(
      fc.asyncProperty(
        fc.oneof(
          validHost.map((host) => ({ host, valid: true })),
          invalidHost.map((host) => ({ host, valid: false })),
        ),
        ({ host, valid }) => assertHost(d, host, valid),
      ),
      { numRuns: 300 },
    )
  })
})

describe('Content-Type parameters of a create', () => {
  interface Parameter {
    name: string
    value: string
  }
  const utf8 = ['utf-8', 'UTF-8', 'utf8', 'Utf8']
  const parameter = fc.oneof(
    fc.record({
      name: fc.constantFrom('charset', 'Charset', 'CHARSET'),
      value: fc.constantFrom(...utf8, '"utf-8"', 'latin1', 'iso-8859-1', '"latin1"', '""', ''),
    }),
    fc.record({
      name: fc.constantFrom('q', 'foo', 'Foo', 'boundary'),
      value: fc.constantFrom('1', 'x', '"a b"', '"a\\"b"', '""', ''),
    }),
  )
  /** What the rule says of a list: no name twice, no value empty, a charset only UTF-8. */
  const accepted = (params: Parameter[]) => {
    const names = params.map((p) => p.name.toLowerCase())
    return (
      new Set(names).size === names.length &&
      params.every((p) => p.value !== '' && p.value !== '""') &&
      params.every(
        (p) => p.name.toLowerCase() !== 'charset' || utf8.includes(p.value.replace(/"/g, '')),
      )
    )
  }
  const contentType = (params: Parameter[], sep: string) =>
    ['application/json', ...params.map((p) => `${p.name}=${p.value}`)].join(sep)

  /**
   * Creates on `d`, each answer asserted whole: 201 with the next id, or the 415. Each returns the
   * status.
   */
  function creates(d: Served): (type: string) => Promise<number> {
    let made = 0
    return async (type) => {
      const answer = await one(d.port, createRequest(d.key, type))
      if (answer.status === 415) assert.deepEqual(JSON.parse(answer.body), unsupported, type)
      const pet = answer.status === 201 ? ++made : undefined
      const [headers, body]: [[string, string][], string] =
        pet === undefined
          ? [RATE_LIMIT, JSON.stringify(unsupported)]
          : [
              [...RATE_LIMIT, ['location', `/v1/pets/${pet}`]],
              `{"id":${pet},"name":"Rex","categoryId":1}`,
            ]
      assert.deepEqual(exact(answer), expected(answer.status, 'create-1', headers, body), type)
      return answer.status
    }
  }

  test('the examples: charset twice is 415 in either order; an empty charset is 415', async (t) => {
    const create = creates(await served(t))
    for (const [type, status] of [
      ['application/json', 201],
      ['application/json; charset=utf-8', 201],
      ['application/json; charset=utf-8; charset=latin1', 415],
      ['application/json; charset=latin1; charset=utf-8', 415],
      ['application/json; charset=utf-8; charset=utf-8', 415],
      ['application/json; charset=', 415],
      ['application/json; charset=""', 415],
      ['application/json; charset', 415],
      ['application/json;', 201],
      ['application/json; foo=bar; FOO=bar', 415],
    ] as const) {
      assert.equal(await create(type), status, type)
    }
  })

  test('generated parameter lists: the answer is the rule’s, whatever their order', async (t) => {
    const create = creates(await served(t))
    await fc.assert(
      fc.asyncProperty(
        fc.array(parameter, { maxLength: 4 }),
        fc.constantFrom(';', '; ', ' ;', ' ; ', ';\t'),
        async (params, sep) => {
          const status = accepted(params) ? 201 : 415
          for (const order of [params, [...params].reverse()]) {
            const type = contentType(order, sep)
            assert.equal(await create(type), status, type)
          }
        },
      ),
      { numRuns: 150 },
    )
  })
})

describe(':authority and Host over HTTP/2', () => {
  async function session(t: TestContext, origin: string): Promise<ClientHttp2Session> {
    const s = http2.connect(origin, { ca: certificate().cert })
    t.after(() => s.destroy())
    await once(s, 'connect')
    return s
  }

  function request(
    s: ClientHttp2Session,
    headers: OutgoingHttpHeaders,
    body?: string,
  ): Promise<{ status: number; link: string | undefined; body: string }> {
    return new Promise((resolve, reject) => {
      const stream = s.request(headers, { endStream: body === undefined })
      let status = 0
      let link: string | undefined
      let text = ''
      stream.setEncoding('utf8')
      stream.on('response', (h) => {
        status = Number(h[':status'])
        link = h.link as string | undefined
      })
      stream.on('data', (chunk: string) => {
        text += chunk
      })
      stream.on('end', () => resolve({ status, link, body: text }))
      stream.on('error', reject)
      if (body !== undefined) stream.end(body)
    })
  }

  test('a Host naming another authority than :authority is 400; the same one is served', async (t) => {
    const server = await tlsServer(t, { http2: true })
    const s = await session(t, server.origin)
    const auth = { authorization: `Bearer ${server.key}` }
    for (const name of ['Ada', 'Bo']) {
      const created = await request(
        s,
        { ':method': 'POST', ':path': '/v1/pets', 'content-type': 'application/json', ...auth },
        JSON.stringify({ name, categoryId: 1 }),
      )
      assert.equal(created.status, 201, created.body)
    }
    const list = (headers: OutgoingHttpHeaders) =>
      request(s, { ':path': '/v1/pets?limit=1', ...auth, ...headers })
    for (const [headers, expected] of [
      [{ ':authority': 'a.example', host: 'b.example' }, disagreeing],
      [{ ':authority': 'a.example:8443', host: 'a.example' }, disagreeing],
      [{ ':authority': 'a.example', host: 'a.example:80' }, disagreeing],
      [{ ':authority': '-evil' }, badAuthority],
      [{ ':authority': 'a.example:0', host: 'a.example' }, badAuthority],
      [{ ':authority': 'a.example', host: '-evil' }, badHost],
    ] as [OutgoingHttpHeaders, object][]) {
      const res = await list(headers)
      assert.equal(res.status, 400, JSON.stringify(headers))
      assert.deepEqual(JSON.parse(res.body), expected, JSON.stringify(headers))
    }
    for (const [headers, origin] of [
      [{ ':authority': 'a.example', host: 'A.EXAMPLE:443' }, 'https://a.example'],
      [{ ':authority': 'a.example:443', host: 'a.example' }, 'https://a.example:443'],
      [{ ':authority': 'api.example:8443' }, 'https://api.example:8443'],
      [{ ':authority': '[::1]:8443', host: '[::1]:8443' }, 'https://[::1]:8443'],
    ] as [OutgoingHttpHeaders, string][]) {
      const res = await list(headers)
      assert.equal(res.status, 200, `${JSON.stringify(headers)}: ${res.body}`)
      assert.equal(res.link, `<${origin}${NEXT}>; rel="next"`, JSON.stringify(headers))
    }
  })
})
