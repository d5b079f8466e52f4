// What the rate limits count together. Failed authentications: an IPv4 address (an IPv4-mapped
// one too) or the /64 of an IPv6 address, in any spelling, in memory and in Redis. Counters in Redis: named by budget and window, so instances with other
// settings (a rolling change of them) count apart, each exactly, and instances with the same ones
// share.
import assert from 'node:assert/strict'
import { isIP } from 'node:net'
import { describe, test } from 'node:test'
import fc from 'fast-check'
import type { FastifyInstance, LightMyRequestResponse } from 'fastify'
import { buildApp } from '../../src/app.js'
import { openRedis } from '../../src/auth/redis.js'
import { manualClock } from '../../src/clock.js'
import { type Config, configWith } from '../../src/config.js'
import { clientNetwork } from '../../src/http/forwarded.js'
import { openTestStore, tempDir, testApp } from '../support/app.js'
import { exchange, rawRequest } from '../support/raw-http.js'
import { startOwnRedis } from '../support/redis-server.js'
import { type ServedApp, servedApp } from '../support/served-app.js'
import { storeIndependent } from '../support/stores.js'

const WRONG_KEY = `Bearer pet_000000000000_${'A'.repeat(43)}`

// ---------------------------------------------------------------------------------------------
// Spellings of an address

/** Eight 16-bit groups. */
type Groups = readonly number[]

/** How one address is written: each group padded or not, in either case, which zeros are `::`. */
interface Spelling {
  pad: boolean[]
  upper: boolean[]
  /** Which run of zero groups is written `::` (past the last run: none). */
  compress: number
  /** The last 32 bits as a dotted IPv4 address. */
  dotted: boolean
}

const spelling: fc.Arbitrary<Spelling> = fc.record({
  pad: fc.array(fc.boolean(), { minLength: 8, maxLength: 8 }),
  upper: fc.array(fc.boolean(), { minLength: 8, maxLength: 8 }),
  compress: fc.nat(4),
  dotted: fc.boolean(),
})

/** `groups` written as `s` says: every form RFC 4291 allows, as a client or a proxy may send it. */
function spell(groups: Groups, s: Spelling): string {
  const hexCount = s.dotted ? 6 : 8
  const pieces = groups.slice(0, hexCount).map((g, i) => {
    const hex = s.pad[i] ? g.toString(16).padStart(4, '0') : g.toString(16)
    return s.upper[i] ? hex.toUpperCase() : hex
  })
  if (s.dotted) {
    const [hi, lo] = [groups[6]!, groups[7]!]
    pieces.push(`${hi >> 8}.${hi & 255}.${lo >> 8}.${lo & 255}`)
  }
  const runs: [number, number][] = []
  for (let i = 0; i < hexCount; i++) {
    if (groups[i] !== 0) continue
    let end = i
    while (end < hexCount && groups[end] === 0) end++
    runs.push([i, end])
    i = end
  }
  const run = runs[s.compress % (runs.length + 1)]
  if (run === undefined) return pieces.join(':')
  return `${pieces.slice(0, run[0]).join(':')}::${pieces.slice(run[1]).join(':')}`
}

const group = fc.integer({ min: 0, max: 0xffff })
const fourGroups = fc.oneof(
  fc.array(group, { minLength: 4, maxLength: 4 }),
  fc.constantFrom([0xfe80, 0, 0, 0], [0x2001, 0xdb8, 0, 0], [0, 0, 0, 0], [0, 0, 0, 0xffff]),
)
/** A zone, as Node reports it for a link-local peer (`fe80::1%eth0`). */
const zone = fc.option(fc.constantFrom('eth0', 'eth1', 'wlan0'), { nil: undefined })

const isMapped = (g: Groups) => g.slice(0, 5).every((x) => x === 0) && g[5] === 0xffff

/** An IPv6 address that is not IPv4-mapped, in some spelling, with its /64 and zone. */
interface V6 {
  text: string
  prefix: Groups
  zone: string | undefined
}

function v6(prefix: Groups, iid: Groups, s: Spelling, z: string | undefined): V6 {
  const text = spell([...prefix, ...iid], s)
  assert.equal(isIP(text), 6, `the generator writes addresses: ${text}`)
  return { text: z === undefined ? text : `${text}%${z}`, prefix, zone: z }
}

const sameList = (a: Groups, b: Groups) => a.every((x, i) => x === b[i])

storeIndependent(() => {
  describe('the network of a client address', () => {
    test('two IPv6 addresses share a key exactly when their /64 and zone are the same, however written', () => {
      fc.assert(
        fc.property(
          fourGroups,
          fc.option(fourGroups, { nil: undefined }),
          fourGroups,
          fourGroups,
          fc.tuple(spelling, spelling),
          fc.tuple(zone, zone),
          (prefixA, otherPrefix, iidA, iidB, [sA, sB], [zA, zB]) => {
            const prefixB = otherPrefix ?? prefixA
            fc.pre(!isMapped([...prefixA, ...iidA]) && !isMapped([...prefixB, ...iidB]))
            const a = v6(prefixA, iidA, sA, zA)
            const b = v6(prefixB, iidB, sB, zB)
            const together = sameList(a.prefix, b.prefix) && a.zone === b.zone
            assert.equal(
              clientNetwork(a.text) === clientNetwork(b.text),
              together,
              `${a.text} ${b.text}`,
            )
            assert.match(clientNetwork(a.text), /\/64$/)
          },
        ),
        { numRuns: 2000 },
      )
    })

    test('an IPv4 address and its IPv4-mapped spellings share one key; other IPv4 addresses do not', () => {
      const v4 = fc.array(fc.integer({ min: 0, max: 255 }), { minLength: 4, maxLength: 4 })
      /** The address dotted, or as `::ffff:…` in any IPv6 spelling. */
      const written = (o: number[], s: Spelling | undefined) =>
        s === undefined
          ? o.join('.')
          : spell([0, 0, 0, 0, 0, 0xffff, (o[0]! << 8) | o[1]!, (o[2]! << 8) | o[3]!], s)
      fc.assert(
        fc.property(
          v4,
          fc.option(v4, { nil: undefined }),
          fc.tuple(
            fc.option(spelling, { nil: undefined }),
            fc.option(spelling, { nil: undefined }),
          ),
          (a, other, [sA, sB]) => {
            const b = other ?? a
            const [textA, textB] = [written(a, sA), written(b, sB)]
            assert.notEqual(isIP(textA), 0, textA)
            assert.equal(clientNetwork(textA), a.join('.'), textA)
            assert.equal(
              clientNetwork(textA) === clientNetwork(textB),
              sameList(a, b),
              `${textA} ${textB}`,
            )
          },
        ),
        { numRuns: 1000 },
      )
    })

    test('examples: the forms Node reports for a peer, and text that is no address', () => {
      assert.equal(clientNetwork('2001:db8:1:2:3:4:5:6'), '2001:db8:1:2::/64')
      assert.equal(clientNetwork('2001:DB8:1:2::FFFF'), '2001:db8:1:2::/64')
      assert.equal(clientNetwork('::ffff:127.0.0.1'), '127.0.0.1')
      assert.equal(clientNetwork('fe80::fc:ff:fe00:1%eth0'), 'fe80:0:0:0::%eth0/64')
      assert.equal(clientNetwork('::1'), '0:0:0:0::/64')
      assert.equal(clientNetwork('not-an-address'), 'not-an-address')
    })
  })
})

// ---------------------------------------------------------------------------------------------
// Through HTTP

const failedFrom = async (served: ServedApp, forwardedFor: string): Promise<number> => {
  const x = await exchange(
    served.port,
    rawRequest('GET', '/v1/pets', [
      ['Host', 'svc.test'],
      ['Authorization', WRONG_KEY],
      ['X-Forwarded-For', forwardedFor],
    ]),
  )
  assert.equal(x.answers.length, 1, `no answer: ${x.error ?? ''}`)
  return x.answers[0]!.status
}

describe('the failed-authentication limit counts networks', () => {
  test('addresses rotated within one IPv6 /64 are refused after the budget', async (t) => {
    const served = await servedApp(t, { trustProxy: ['loopback'], authFailureLimitMax: 3 })
    const rotated = [
      '2001:db8:1:2::1',
      '2001:DB8:1:2:a:b:c:d',
      '2001:0db8:0001:0002:ffff:ffff:ffff:ffff',
      '2001:db8:1:2::198.51.100.1',
      '2001:db8:1:2:8000::',
    ]
    const statuses = []
    for (const address of rotated) statuses.push(await failedFrom(served, address))
    assert.deepEqual(statuses, [401, 401, 401, 429, 429])
    // The next /64 is another network, with a budget of its own.
    assert.equal(await failedFrom(served, '2001:db8:1:3::1'), 401)
    // An IPv4 address and its IPv4-mapped spellings are one client.
    const mapped = []
    for (const address of ['198.51.100.9', '::ffff:198.51.100.9', '::FFFF:c633:6409']) {
      mapped.push(await failedFrom(served, address))
    }
    mapped.push(await failedFrom(served, '198.51.100.9'))
    assert.deepEqual(mapped, [401, 401, 401, 429])
  })

  test('the socket address is counted by its network too, link-local ones per link', async (t) => {
    const app = await testApp(t, { config: { authFailureLimitMax: 2 } })
    const from = async (remoteAddress: string) =>
      (
        await app.app.inject({
          method: 'GET',
          url: '/v1/pets',
          headers: { authorization: WRONG_KEY },
          remoteAddress,
        })
      ).statusCode
    const statuses = []
    for (const address of ['fe80::1%eth0', 'fe80::fc:ff:fe00:1%eth0', 'fe80::2%eth0']) {
      statuses.push(await from(address))
    }
    assert.deepEqual(statuses, [401, 401, 429])
    // Another interface of this host is another link.
    assert.equal(await from('fe80::1%eth1'), 401)
    assert.equal(await from('::ffff:192.0.2.1'), 401)
    assert.equal(await from('192.0.2.1'), 401)
    assert.equal(await from('192.0.2.1'), 429)
  })
})

// ---------------------------------------------------------------------------------------------
// Counters in Redis

const KEY = 'limit-keys-configured-key-0123456789'

interface Instance {
  app: FastifyInstance
  logs: string[]
}

/** The RateLimit field's remaining budget of policy "default", its other parts checked. */
function remaining(res: LightMyRequestResponse): number {
  const m = /^"default";r=(\d+);t=(\d+)$/.exec(String(res.headers.ratelimit))
  assert.ok(m, `RateLimit: ${String(res.headers.ratelimit)}`)
  return Number(m[1])
}

describe('counters in Redis', () => {
  test('a rolling change of the budget starts a fresh count: each setting is served exactly, instances with one setting share it', {
    timeout: 120_000,
  }, async (t) => {
    const redis = await startOwnRedis(t)
    const { store } = await openTestStore(t, tempDir(t), {})
    const clock = manualClock(new Date('2026-01-15T12:00:00Z'))
    /** An instance of the service, as a process would be: its own Redis client and counters. */
    const instance = async (config: Partial<Config>): Promise<Instance> => {
      const client = await openRedis(redis.url, process.stderr)
      t.after(() => client.disconnect())
      const logs: string[] = []
      const app = await buildApp({
        config: configWith({
          apiKeys: [KEY],
          rateLimitStore: 'redis',
          authFailureLimitMax: 3,
          ...config,
        }),
        store,
        clock,
        redis: client,
        logger: { level: 'warn', stream: { write: (line: string) => logs.push(line) } },
      })
      await app.ready()
      t.after(() => app.close())
      return { app, logs }
    }
    const list = (i: Instance) =>
      i.app.inject({ method: 'GET', url: '/v1/pets', headers: { authorization: `Bearer ${KEY}` } })

    // The old setting: 640 a minute, leases of 10.
    const old = await instance({ rateLimitMax: 640 })
    for (let n = 1; n <= 400; n++) {
      const res = await list(old)
      assert.equal(res.statusCode, 200)
      assert.equal(remaining(res), 640 - n)
    }

    // Two instances restarted with 320, leases of 5: a fresh count, not the 400 already spent.
    const [a, b] = [await instance({ rateLimitMax: 320 }), await instance({ rateLimitMax: 320 })]
    const first = await list(a)
    assert.equal(first.statusCode, 200)
    assert.equal(first.headers['ratelimit-policy'], '"default";q=320;w=60')
    assert.equal(remaining(first), 319)
    // B shares A's counter: the lease A holds is reserved for B too.
    assert.equal(remaining(await list(b)), 320 - 10 + 4)
    let served = 2
    const refused = new Set<Instance>()
    for (let n = 0; refused.size < 2; n++) {
      const i = n % 2 === 0 ? a : b
      const res = await list(i)
      if (res.statusCode === 200) served++
      else {
        assert.equal(res.statusCode, 429)
        assert.equal(remaining(res), 0)
        refused.add(i)
      }
    }
    assert.equal(served, 320)

    // The old instance still has its own count: exactly the rest of its 640.
    let oldServed = 0
    for (;;) {
      const res = await list(old)
      if (res.statusCode !== 200) break
      oldServed++
      assert.equal(remaining(res), 240 - oldServed)
    }
    assert.equal(oldServed, 240)
    assert.equal((await list(old)).statusCode, 429)

    // Another window is another count too.
    const hourly = await instance({ rateLimitMax: 320, rateLimitWindowMs: 3_600_000 })
    const res = await list(hourly)
    assert.equal(res.headers['ratelimit-policy'], '"default";q=320;w=3600')
    assert.equal(remaining(res), 319)

    // Failed authentications: the auth-failure setting is the same everywhere, so one counter,
    // by the client's /64, whichever instance a rotated address reaches.
    const fail = (i: Instance, address: string) =>
      i.app.inject({
        method: 'GET',
        url: '/v1/pets',
        headers: { authorization: WRONG_KEY },
        remoteAddress: address,
      })
    const statuses = []
    for (const [i, address] of [
      [old, '2001:db8:7:8::1'],
      [a, '2001:db8:7:8:ffff::2'],
      [b, '2001:DB8:7:8::3'],
      [hourly, '2001:db8:7:8:1:2:3:4'],
    ] as const) {
      statuses.push((await fail(i, address)).statusCode)
    }
    assert.deepEqual(statuses, [401, 401, 401, 429])

    const client = await redis.client()
    const held = Object.fromEntries(
      await Promise.all(
        (await client.keys('*')).sort().map(async (name) => [name, await client.get(name)]),
      ),
    )
    assert.deepEqual(held, {
      'petstore-rl:3:60000:auth-failures:2001:db8:7:8::/64': '3',
      'petstore-rl:320:3600000:default:config-1': '5',
      'petstore-rl:320:60000:default:config-1': '320',
      'petstore-rl:640:60000:default:config-1': '640',
    })
    // Every count went to Redis: had one fallen back to memory, the figures above would differ.
    for (const i of [old, a, b, hourly]) assert.deepEqual(i.logs, [])
  })
})
