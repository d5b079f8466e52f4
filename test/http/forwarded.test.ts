// PETSTORE_TRUST_PROXY on real sockets (the peer is 127.0.0.1): which X-Forwarded-For entry is
// the client, read from the right while hops are trusted; X-Forwarded-Proto and -Host read at the
// same hop, in the next-page Link too; a non-address entry never taken.
import assert from 'node:assert/strict'
import { BlockList, isIP } from 'node:net'
import { describe, type TestContext, test } from 'node:test'
import fc from 'fast-check'
import type { FastifyInstance } from 'fastify'
import { type Config, ConfigError, loadConfig, settings } from '../../src/config.js'
import { isAuthority } from '../../src/http/authority.js'
import { compileTrust } from '../../src/http/forwarded.js'
import { exchange, header, type RawAnswer, rawRequest } from '../support/raw-http.js'
import { completedLines, type ServedApp, servedApp } from '../support/served-app.js'
import { storeIndependent } from '../support/stores.js'
import { until } from '../support/wait.js'

const WRONG_KEY = `pet_000000000000_${'A'.repeat(43)}`

interface Seen {
  ip: string
  host: string
  protocol: string
}

/** A public route that reports what Fastify's request says of the client. */
function whoami(app: FastifyInstance): void {
  app.get('/whoami', { config: { public: true } }, async (request) => ({
    ip: request.ip,
    host: request.host,
    protocol: request.protocol,
  }))
}

async function ask(port: number, target: string, headers: [string, string][]): Promise<RawAnswer> {
  const x = await exchange(port, rawRequest('GET', target, [['Host', 'svc.test:8080'], ...headers]))
  assert.equal(x.answers.length, 1, `no answer: ${x.error ?? ''} ${x.rest}`)
  return x.answers[0]!
}

async function seen(served: ServedApp, headers: [string, string][]): Promise<Seen> {
  const answer = await ask(served.port, '/whoami', headers)
  assert.equal(answer.status, 200, answer.body)
  return JSON.parse(answer.body) as Seen
}

/** The app's `request completed` line of the request with this X-Request-Id, once written. */
async function loggedLine(served: ServedApp, requestId: string): Promise<Record<string, unknown>> {
  const line = () => completedLines(served).find((l) => l.requestId === requestId)
  await until(`the log line of ${requestId}`, () => line() !== undefined, 5000)
  return line()!
}

const xff = (value: string): [string, string] => ['X-Forwarded-For', value]
const proto = (value: string): [string, string] => ['X-Forwarded-Proto', value]
const fwdHost = (value: string): [string, string] => ['X-Forwarded-Host', value]

/** Sends each case to the app's /whoami and asserts what Fastify's request says. */
async function assertSeen(served: ServedApp, cases: [[string, string][], Seen][]): Promise<void> {
  for (const [headers, expected] of cases) {
    assert.deepEqual(await seen(served, headers), expected, JSON.stringify(headers))
  }
}

const CONNECTION: Seen = { ip: '127.0.0.1', host: 'svc.test:8080', protocol: 'http' }
const from = (ip: string, more: Partial<Seen> = {}): Seen => ({ ...CONNECTION, ip, ...more })

storeIndependent(() => {
  describe('PETSTORE_TRUST_PROXY: the setting', () => {
    const parsed = (raw: string) => loadConfig({ PETSTORE_TRUST_PROXY: raw }, null).trustProxy

    test('false, true, a number of hops or a list of addresses, CIDRs and range names', () => {
      assert.equal(loadConfig({}, null).trustProxy, false)
      assert.equal(parsed('false'), false)
      assert.equal(parsed('0'), false)
      assert.equal(parsed('true'), true)
      assert.equal(parsed('1'), 1)
      assert.equal(parsed('64'), 64)
      assert.deepEqual(parsed('127.0.0.1'), ['127.0.0.1'])
      assert.deepEqual(parsed(' loopback , 10.0.0.0/8,2001:db8::/32,'), [
        'loopback',
        '10.0.0.0/8',
        '2001:db8::/32',
      ])
      assert.deepEqual(parsed('uniquelocal,linklocal,::ffff:10.0.0.0/104'), [
        'uniquelocal',
        'linklocal',
        '::ffff:10.0.0.0/104',
      ])
    })

    test('a list’s CIDRs match as net.BlockList does; an IPv4-mapped address is the IPv4 it carries', () => {
      const ipv4 = fc.oneof(fc.ipV4(), fc.constantFrom('10.0.0.1', '10.255.255.255', '11.0.0.0'))
      const ipv6 = fc.oneof(fc.ipV6(), fc.constantFrom('fc00::1', 'fe00::', '::', '::1'))
      // BlockList keeps IPv4-mapped addresses IPv6, where the setting reads them as IPv4.
      const notMapped = (address: string) => !/^::ffff:/i.test(address)
      for (const [family, address, max] of [
        ['ipv4', ipv4, 32],
        ['ipv6', ipv6.filter(notMapped), 128],
      ] as const) {
        const cidr = fc.tuple(address, fc.integer({ min: 1, max }))
        fc.assert(
          fc.property(
            fc.array(cidr, { minLength: 1, maxLength: 4 }),
            fc.array(address),
            (cidrs, probes) => {
              const blocks = new BlockList()
              for (const [a, prefix] of cidrs) blocks.addSubnet(a, prefix, family)
              const trusts = compileTrust(cidrs.map(([a, prefix]) => `${a}/${prefix}`))
              for (const probe of probes) {
                assert.equal(trusts(probe, 0), blocks.check(probe, family), `${probe} in ${cidrs}`)
              }
            },
          ),
          { numRuns: 500 },
        )
      }
      const trusts = compileTrust(['10.0.0.0/8', '::ffff:192.168.0.0/112'])
      for (const [address, trusted] of [
        ['::ffff:10.1.2.3', true],
        ['192.168.4.5', true],
        ['::FFFF:c0a8:405', true],
        ['11.0.0.1', false],
        ['::ffff:11.0.0.1', false],
        ['::10.1.2.3', false],
        ['unknown', false],
        ['10.0.0.1:80', false],
      ] as const) {
        assert.equal(trusts(address, 0), trusted, address)
      }
    })

    test('anything else stops the start, saying what is accepted', () => {
      const accepts = settings.find((s) => s.env === 'PETSTORE_TRUST_PROXY')!.accepts
      for (const raw of [
        '',
        'yes',
        '65',
        '-1',
        '1.5',
        'proxy.internal',
        '127.1',
        '10.0.0.0/33',
        '10.0.0.0/0',
        '10.0.0.0/',
        '10.0.0.0/8x',
        '10.0.0.0/255.0.0.0',
        'fe80::1%eth0',
        '::ffff:10.0.0.0/8',
        '127.0.0.1, nope',
        ',',
      ]) {
        assert.throws(
          () => parsed(raw),
          (err: unknown) => {
            assert.ok(err instanceof ConfigError, raw)
            assert.deepEqual(err.problems, [
              `PETSTORE_TRUST_PROXY=${JSON.stringify(raw)} is invalid: expected ${accepts}`,
            ])
            return true
          },
        )
      }
    })
  })
})

describe('PETSTORE_TRUST_PROXY: the client address', () => {
  /** The app with /whoami. */
  const whoamiApp = (t: TestContext, config: Partial<Config>) => servedApp(t, config, whoami)

  test('one trusted hop: rotating the entries a client writes in front of the proxy’s own does not reset the failed-authentication budget', async (t) => {
    const wrongKeyFrom = async (d: ServedApp, forwardedFor: string) =>
      (await ask(d.port, '/v1/pets', [['Authorization', `Bearer ${WRONG_KEY}`], xff(forwardedFor)]))
        .status
    for (const trustProxy of [1, ['127.0.0.1'], ['loopback', '10.0.0.0/8']] as const) {
      const d = await whoamiApp(t, { trustProxy, authFailureLimitMax: 3 })
      const statuses: number[] = []
      // What an appending proxy (ALB, HAProxy, nginx $proxy_add_x_forwarded_for) passes on:
      // whatever the client wrote, then the address it saw.
      for (let i = 1; i <= 5; i++) {
        statuses.push(await wrongKeyFrom(d, `198.51.100.${i}, 10.9.${i}.1, 203.0.113.7`))
      }
      assert.deepEqual(statuses, [401, 401, 401, 429, 429], JSON.stringify(trustProxy))
      // Another client behind the same proxy has a budget of its own.
      assert.equal(await wrongKeyFrom(d, '198.51.100.1, 203.0.113.8'), 401)
      const limited = await ask(d.port, '/v1/pets', [
        ['Authorization', `Bearer ${WRONG_KEY}`],
        xff('203.0.113.7'),
      ])
      assert.equal(limited.status, 429)
      assert.deepEqual(JSON.parse(limited.body), {
        code: 'rate_limited',
        message: 'too many failed authentication attempts from this address',
        status: 429,
      })
    }
    // `true` trusts every hop, the leftmost entry is the client: each rotation is a new budget.
    const all = await whoamiApp(t, { trustProxy: true, authFailureLimitMax: 3 })
    const statuses: number[] = []
    for (let i = 1; i <= 5; i++) {
      statuses.push(await wrongKeyFrom(all, `198.51.100.${i}, 203.0.113.7`))
    }
    assert.deepEqual(statuses, [401, 401, 401, 401, 401])
  })

  test('a 12 KB X-Forwarded-For: request.ip stays an address, the log line stays short', async (t) => {
    const long = 'x'.repeat(12_000)
    const digits = '1'.repeat(12_000)
    for (const [trustProxy, forwardedFor, ip] of [
      [true, long, '127.0.0.1'],
      [true, digits, '127.0.0.1'],
      [true, `${long}, 203.0.113.7`, '203.0.113.7'],
      [1, `203.0.113.7, ${long}`, '127.0.0.1'],
      [1, `${long}, 203.0.113.7`, '203.0.113.7'],
      [2, `${'198.51.100.1, '.repeat(800)}203.0.113.7`, '198.51.100.1'],
      [['loopback'], `${long},127.0.0.2`, '127.0.0.2'],
    ] as const) {
      const d = await whoamiApp(t, { trustProxy })
      const requestId = `long-${d.port}`
      const answer = await ask(d.port, '/whoami', [xff(forwardedFor), ['X-Request-Id', requestId]])
      assert.equal((JSON.parse(answer.body) as Seen).ip, ip, JSON.stringify(trustProxy))
      const line = await loggedLine(d, requestId)
      assert.equal(line.remoteAddress, ip)
      assert.ok(JSON.stringify(line).length < 400, `${JSON.stringify(line).length} bytes`)
    }
  })

  test('an entry that is not an IP address ends the walk: it never becomes the client address', async (t) => {
    const d = await whoamiApp(t, { trustProxy: true })
    await assertSeen(d, [
      [[xff('unknown')], from('127.0.0.1')],
      [[xff('203.0.113.5, unknown, 10.0.0.2')], from('10.0.0.2')],
      [[xff('203.0.113.5, unix:, 10.0.0.2')], from('10.0.0.2')],
      [[xff('203.0.113.5, 10.0.0.2:4711')], from('127.0.0.1')],
      [[xff('[2001:db8::1], 10.0.0.2')], from('10.0.0.2')],
      [[xff('fe80::1%eth0')], from('127.0.0.1')],
      [[xff('203.0.113.5, , 10.0.0.2')], from('10.0.0.2')],
      [[xff('203.0.113.5,10.0.0.2,')], from('127.0.0.1')],
      [[xff('')], from('127.0.0.1')],
      [[xff('1.2.3.04')], from('127.0.0.1')],
      [[xff('2001:db8::7')], from('2001:db8::7')],
      [[xff('203.0.113.5'), xff('10.0.0.2')], from('203.0.113.5')],
    ])
  })

  test('a list of addresses and CIDRs: the walk passes trusted proxies and stops at the first other address', async (t) => {
    const d = await whoamiApp(t, { trustProxy: ['127.0.0.1', '10.0.0.0/8', '2001:db8::/32'] })
    await assertSeen(d, [
      [[], from('127.0.0.1')],
      [[xff('198.51.100.7')], from('198.51.100.7')],
      [[xff('198.51.100.7, 10.1.2.3')], from('198.51.100.7')],
      [[xff('198.51.100.7, 10.1.2.3, 10.200.0.1')], from('198.51.100.7')],
      [[xff('198.51.100.7, 192.0.2.1, 10.1.2.3')], from('192.0.2.1')],
      [[xff('198.51.100.7, 2001:db8:ffff::1, 10.1.2.3')], from('198.51.100.7')],
      [[xff('198.51.100.7, 2001:db9::1')], from('2001:db9::1')],
      [[xff('198.51.100.7, ::ffff:10.0.0.1')], from('198.51.100.7')],
      [[xff('10.0.0.1, 10.0.0.2')], from('10.0.0.1')],
    ])
    // A peer outside the list is the client itself, whatever it forwards.
    const far = await whoamiApp(t, { trustProxy: ['10.0.0.0/8'] })
    await assertSeen(far, [
      [[xff('198.51.100.7'), proto('https'), fwdHost('public.example')], CONNECTION],
    ])
  })

  test('protocol and host come from the hop the address came from, else from the connection', async (t) => {
    const chain: [string, string][] = [
      xff('198.51.100.7, 10.0.0.2'),
      proto('https, http'),
      fwdHost('public.example, internal.example:8080'),
    ]
    await assertSeen(await whoamiApp(t, { trustProxy: 2 }), [
      [chain, from('198.51.100.7', { protocol: 'https', host: 'public.example' })],
      // A proxy that sets rather than appends speaks for the nearest hop only.
      [[xff('198.51.100.7, 10.0.0.2'), proto('https')], from('198.51.100.7')],
      [
        [xff('198.51.100.7'), proto('https'), fwdHost('public.example')],
        from('198.51.100.7', { protocol: 'https', host: 'public.example' }),
      ],
      [[xff('198.51.100.7'), proto('HTTPS')], from('198.51.100.7', { protocol: 'https' })],
      [[xff('198.51.100.7'), proto('ftp'), fwdHost('-evil')], from('198.51.100.7')],
      [[xff('198.51.100.7'), fwdHost('a.example:99999')], from('198.51.100.7')],
      [[xff('198.51.100.7'), fwdHost(`${'a'.repeat(64)}.example`)], from('198.51.100.7')],
      // Without X-Forwarded-For the peer is the client, and the connection says the rest.
      [[proto('https'), fwdHost('public.example')], CONNECTION],
      // A non-address entry ends the walk at the hop before it: that hop's protocol and host.
      [
        [...chain.slice(1), xff('garbage, 10.0.0.2')],
        from('10.0.0.2', { protocol: 'http', host: 'internal.example:8080' }),
      ],
    ])
    await assertSeen(await whoamiApp(t, { trustProxy: 1 }), [
      [chain, from('10.0.0.2', { protocol: 'http', host: 'internal.example:8080' })],
    ])
    await assertSeen(await whoamiApp(t, { trustProxy: false }), [[chain, CONNECTION]])
  })

  test('whatever the forwarded headers, request.ip is an IP address, host valid or empty, protocol http(s)', async (t) => {
    const apps = await Promise.all(
      ([true, 3, ['loopback', '10.0.0.0/8'], false] as const).map((trustProxy) =>
        whoamiApp(t, { trustProxy }),
      ),
    )
    const entry = fc.oneof(
      fc.ipV4(),
      fc.ipV6(),
      fc.constantFrom('unknown', 'unix:', '10.0.0.1:80', '[::1]', '', ' ', 'fe80::1%lo'),
      fc.string({ unit: fc.constantFrom(...'0123456789abcdef:.x% '), maxLength: 50 }),
    )
    const list = fc.array(entry, { maxLength: 6 }).map((entries) => entries.join(', '))
    const hosts = fc.array(
      fc.oneof(fc.domain(), fc.constantFrom('-evil', 'a:0', '[::1]:443', '', 'x'.repeat(300))),
      { maxLength: 4 },
    )
    await fc.assert(
      fc.asyncProperty(
        fc.nat(apps.length - 1),
        list,
        fc.array(fc.constantFrom('http', 'https', 'HTTPS', 'ws', ''), { maxLength: 4 }),
        hosts,
        async (which, forwardedFor, protos, forwardedHosts) => {
          const s = await seen(apps[which]!, [
            xff(forwardedFor),
            proto(protos.join(', ')),
            fwdHost(forwardedHosts.join(', ')),
          ])
          assert.notEqual(isIP(s.ip), 0, s.ip)
          assert.ok(s.ip.length <= 45 && !s.ip.includes('%'), s.ip)
          assert.ok(isAuthority(s.host), s.host)
          assert.ok(s.protocol === 'http' || s.protocol === 'https', s.protocol)
        },
      ),
      { numRuns: 200 },
    )
  })
})

describe('PETSTORE_TRUST_PROXY: the next-page Link', () => {
  test('a forwarded list: the Link names the protocol and host of the address’s hop, the log line the address', async (t) => {
    const d = await servedApp(t, { trustProxy: ['loopback', '10.0.0.0/8'] })
    for (const name of ['Ada', 'Bo', 'Cy']) {
      const created = await exchange(
        d.port,
        rawRequest(
          'POST',
          '/v1/pets',
          [
            ['Host', 'svc.test'],
            ['Authorization', `Bearer ${d.key}`],
            ['Content-Type', 'application/json'],
          ],
          JSON.stringify({ name, categoryId: 1 }),
        ),
      )
      assert.equal(created.answers[0]?.status, 201)
    }
    let n = 0
    for (const [headers, link, ip] of [
      [
        [
          xff('198.51.100.7, 10.0.0.2'),
          proto('https, http'),
          fwdHost('public.example, internal.example:8080'),
        ],
        '<https://public.example/v1/pets?limit=1&cursor=djE6MQ>; rel="next"',
        '198.51.100.7',
      ],
      [
        [
          xff('198.51.100.7, 192.0.2.1'),
          proto('https, http'),
          fwdHost('public.example, b.example'),
        ],
        '<http://b.example/v1/pets?limit=1&cursor=djE6MQ>; rel="next"',
        '192.0.2.1',
      ],
      [
        [xff('garbage'), proto('https'), fwdHost('public.example')],
        '<http://svc.test:8080/v1/pets?limit=1&cursor=djE6MQ>; rel="next"',
        '127.0.0.1',
      ],
    ] as [[string, string][], string, string][]) {
      const label = JSON.stringify(headers)
      const id = `list-${++n}`
      const answer = await ask(d.port, '/v1/pets?limit=1', [
        ['Authorization', `Bearer ${d.key}`],
        ['X-Request-Id', id],
        ...headers,
      ])
      assert.equal(answer.status, 200, label)
      assert.deepEqual(
        (JSON.parse(answer.body) as { name: string }[]).map((p) => p.name),
        ['Ada'],
        label,
      )
      assert.equal(header(answer, 'link'), link, label)
      assert.equal((await loggedLine(d, id)).remoteAddress, ip, label)
    }
  })
})
