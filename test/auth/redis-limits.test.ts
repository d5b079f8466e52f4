// Rate limits in Redis when Redis misbehaves: real `petstore serve` processes against a
// redis-server of the test's own, which the tests stop (SIGSTOP), kill and restart. A hung or dead
// Redis costs a request at most the command bound, the limits stay enforced in memory meanwhile,
// each outage is logged once each way, and the counters are shared again once Redis answers.
import assert from 'node:assert/strict'
import { createHash } from 'node:crypto'
import { type TestContext, test } from 'node:test'
import { counterName } from '../../src/auth/admission.js'
import { REDIS_BREAKER_OPEN_MS, REDIS_COMMAND_BOUND_MS } from '../../src/auth/redis.js'
import { type StartedService, startService } from '../support/process.js'
import { type OwnRedis, startOwnRedis } from '../support/redis-server.js'
import { storeIndependent } from '../support/stores.js'
import { until } from '../support/wait.js'

/** Configured keys: the service names their counters `config-1`, `config-2`… */
const KEYS = Array.from({ length: 16 }, (_, i) => `redis-limits-key-${i + 1}-0123456789`)
const keyId = (key: string) => `config-${KEYS.indexOf(key) + 1}`
const BUDGET = 50
/** The Redis counter of a key's budget: named by budget, window (ms), policy and key id. */
const counterOf = (key: string) => `petstore-rl:${BUDGET}:60000:default:${keyId(key)}`
const POLICY = `"default";q=${BUDGET};w=60`
const UNREACHABLE =
  'rate-limit store (Redis) unreachable: limits are counted per process until it answers'
const BACK = 'rate-limit store (Redis) reachable again: limits are shared'
const LIMITED =
  '{"code":"rate_limited","message":"rate limit of this API key exceeded","status":429}'

function startInstance(t: TestContext, redisUrl: string, extra: Record<string, string> = {}) {
  return startService(t, {
    env: {
      PETSTORE_API_KEYS: KEYS.join(','),
      PETSTORE_RATE_LIMIT_STORE: 'redis',
      PETSTORE_REDIS_URL: redisUrl,
      PETSTORE_RATE_LIMIT_MAX: String(BUDGET),
      PETSTORE_LOG_LEVEL: 'warn',
      ...extra,
    },
  })
}

interface Answer {
  status: number
  body: string
  /** The remaining budget the RateLimit field states, its other parts checked. */
  remaining: number
  ms: number
}

/** listPets with `key`, checking the rate-limit fields of a 200 or 429 exactly. */
async function list(origin: string, key: string): Promise<Answer> {
  const started = performance.now()
  const res = await fetch(`${origin}/v1/pets`, { headers: { authorization: `Bearer ${key}` } })
  const body = await res.text()
  const ms = performance.now() - started
  assert.ok(res.status === 200 || res.status === 429, `${res.status} ${body}`)
  assert.equal(res.headers.get('ratelimit-policy'), POLICY)
  const m = /^"default";r=(\d+);t=(\d+)$/.exec(res.headers.get('ratelimit') ?? '')
  assert.ok(m, `RateLimit: ${res.headers.get('ratelimit')}`)
  const t = Number(m[2])
  assert.ok(t >= 1 && t <= 60, `t=${t}`)
  if (res.status === 429) {
    assert.equal(body, LIMITED)
    assert.equal(m[1], '0')
    assert.match(res.headers.get('retry-after') ?? '', /^[1-9]\d*$/)
  } else {
    assert.equal(body, '[]')
  }
  return { status: res.status, body, remaining: Number(m[1]), ms }
}

/** The service's log lines with message `msg`. */
function logged(service: StartedService, msg: string): unknown[] {
  return service
    .stdout()
    .split('\n')
    .filter((line) => line.startsWith('{'))
    .map((line) => JSON.parse(line) as { msg: string })
    .filter((line) => line.msg === msg)
}

/** How long `/healthz` (no key, no limit, no Redis) takes now: the machine's own slowness. */
async function healthzMs(origin: string): Promise<number> {
  const started = performance.now()
  const res = await fetch(`${origin}/healthz`)
  await res.arrayBuffer()
  assert.equal(res.status, 200)
  return performance.now() - started
}

/**
 * The median request waited no more than Redis's bound (plus 50 ms), over what a request that does
 * not touch Redis took at the same time, twice: a loaded machine slows both.
 */
function assertMedianWithinBound(label: string, times: number[], control: number[]) {
  const sorted = [...times].sort((x, y) => x - y)
  const slowness = percentile(
    [...control].sort((x, y) => x - y),
    0.5,
  )
  const median = percentile(sorted, 0.5)
  const bound = REDIS_COMMAND_BOUND_MS + 50 + 2 * slowness
  assert.ok(
    median < bound,
    `${label}: median ${median.toFixed(1)} ms, bound ${bound.toFixed(1)} ms`,
  )
}

function percentile(sorted: number[], p: number): number {
  return sorted[Math.min(sorted.length - 1, Math.floor(sorted.length * p))]!
}

/**
 * Asserts that `answers`, all of one key counted from a fresh window in one place, are its budget
 * exactly: each remaining figure from BUDGET-1 down once, then only 429s.
 */
function assertCountedOnce(answers: Answer[], label: string) {
  const served = answers.filter((a) => a.status === 200)
  assert.equal(served.length, Math.min(answers.length, BUDGET), label)
  assert.deepEqual(
    served.map((a) => a.remaining).sort((a, b) => b - a),
    Array.from({ length: served.length }, (_, i) => BUDGET - 1 - i),
    label,
  )
}

/** Calls `list` with `key` until its counter is in Redis; the answer that put it there. */
async function untilShared(redis: OwnRedis, origin: string, key: string): Promise<Answer> {
  const client = await redis.client()
  let answer!: Answer
  await until(
    `the counter of ${keyId(key)} is kept in Redis`,
    async () => {
      answer = await list(origin, key)
      return (await client.get(counterOf(key))) !== null
    },
    60_000,
  )
  return answer
}

storeIndependent(() => {
  test('a hung Redis costs a request no more than its bound; limits hold in memory, then are shared again', {
    timeout: 120_000,
  }, async (t) => {
    const redis = await startOwnRedis(t)
    const [a, b, c] = (await Promise.all([0, 1, 2].map(() => startInstance(t, redis.url)))) as [
      StartedService,
      StartedService,
      StartedService,
    ]
    const client = await redis.client()

    const before = await list(a.origin, KEYS[0]!)
    assert.deepEqual([before.status, before.remaining], [200, BUDGET - 1])
    assert.equal(await client.get(counterOf(KEYS[0]!)), '1')

    // Hung: the process holds its connections but answers nothing.
    process.kill(redis.pid(), 'SIGSTOP')
    const loadKeys = KEYS.slice(1, 9)
    const answers = new Map<string, Answer[]>(loadKeys.map((k) => [k, []]))
    const refused = new Set<string>()
    const control: number[] = []
    let sent = 0
    // Until every key is past its budget, and past one probe of the hung Redis.
    const probed = performance.now() + REDIS_BREAKER_OPEN_MS + 1000
    const busy = () => refused.size < loadKeys.length || sent < 240 || performance.now() < probed
    await Promise.all(
      Array.from({ length: 8 }, async () => {
        while (busy()) {
          const key = loadKeys[sent++ % loadKeys.length]!
          const answer = await list(a.origin, key)
          answers.get(key)!.push(answer)
          if (answer.status === 429) refused.add(key)
          control.push(await healthzMs(a.origin))
        }
      }),
    )
    const all = [...answers.values()].flat()
    const times = all.map((x) => x.ms).sort((x, y) => x - y)
    t.diagnostic(
      `hung Redis: ${all.length} requests, median ${percentile(times, 0.5).toFixed(1)} ms, p99 ${percentile(times, 0.99).toFixed(1)} ms, max ${times.at(-1)!.toFixed(1)} ms`,
    )
    assertMedianWithinBound('hung Redis', times, control)
    for (const [key, seen] of answers) assertCountedOnce(seen, key)
    await a.waitFor((out) => out.includes(UNREACHABLE))
    assert.equal(logged(a, UNREACHABLE).length, 1)
    assert.equal(logged(a, BACK).length, 0)
    assert.equal(a.stderr(), '')

    // Resumed: once a probe has answered, counts go to Redis again, one budget for the three instances.
    process.kill(redis.pid(), 'SIGCONT')
    const shared = KEYS[9]!
    const first = await untilShared(redis, a.origin, shared)
    assert.deepEqual([first.status, first.remaining], [200, BUDGET - 1])
    assert.equal((await list(b.origin, shared)).remaining, BUDGET - 2)
    assert.equal((await list(c.origin, shared)).remaining, BUDGET - 3)
    assert.equal((await list(a.origin, shared)).remaining, BUDGET - 4)
    assert.equal(await client.get(counterOf(shared)), '4')
    await a.waitFor((out) => out.includes(BACK))
    assert.equal(logged(a, UNREACHABLE).length, 1)
    assert.equal(logged(a, BACK).length, 1)
    for (const name of await client.keys('*')) {
      assert.match(name, /^petstore-rl:50:60000:default:config-\d+$/)
    }
    // Redis has run what was sent to it while hung (the probe that answered came after it on the
    // same connection): only the counts of the requests in flight when it stopped, one per client.
    const counted = await client.mget(loadKeys.map(counterOf))
    const sentWhileHung = counted.reduce((n, v) => n + Number(v ?? 0), 0)
    t.diagnostic(`counts sent to the hung Redis: ${sentWhileHung}`)
    assert.ok(sentWhileHung >= 1 && sentWhileHung <= 8, `${sentWhileHung} counts sent while hung`)
  })

  test('counters in Redis are named by budget, window, policy and key id or client network', async (t) => {
    const redis = await startOwnRedis(t)
    const service = await startInstance(t, redis.url)
    const client = await redis.client()
    assert.equal((await list(service.origin, KEYS[0]!)).status, 200)
    const refused = await fetch(`${service.origin}/v1/pets`, {
      headers: { authorization: 'Bearer not-a-key' },
    })
    assert.equal(refused.status, 401)
    assert.match(refused.headers.get('ratelimit') ?? '', /^"auth-failures";r=\d+;t=\d+$/)
    assert.deepEqual((await client.keys('*')).sort(), [
      'petstore-rl:30:60000:auth-failures:127.0.0.1',
      'petstore-rl:50:60000:default:config-1',
    ])
    for (const name of await client.keys('*')) {
      assert.equal(await client.get(name), '1')
      const ttl = await client.pttl(name)
      assert.ok(ttl > 0 && ttl <= 60_000, `${name}: PTTL ${ttl}`)
    }
  })

  test('a counter name keeps a subject of up to 64 characters and names a longer one by its digest', () => {
    const longest = `2001:db8:${'0'.repeat(55)}`
    assert.equal(counterName('auth-failures', '203.0.113.7'), 'auth-failures:203.0.113.7')
    assert.equal(counterName('default', 'config-1'), 'default:config-1')
    assert.equal(counterName('auth-failures', longest), `auth-failures:${longest}`)
    const longer = `${longest}1`
    const digest = createHash('sha256').update(longer).digest('base64url')
    assert.equal(counterName('auth-failures', longer), `auth-failures:sha256:${digest}`)
    assert.equal(
      counterName('auth-failures', 'x'.repeat(8000)).length,
      'auth-failures:sha256:'.length + 43,
    )
  })

  test('a dead Redis is left alone at once, limits hold in memory, and a restarted one is used again', {
    timeout: 60_000,
  }, async (t) => {
    const redis = await startOwnRedis(t)
    const service = await startInstance(t, redis.url)
    assert.equal((await list(service.origin, KEYS[0]!)).remaining, BUDGET - 1)

    await redis.kill()
    const answers: Answer[] = []
    const control: number[] = []
    for (let i = 0; i < BUDGET + 10; i++) {
      answers.push(await list(service.origin, KEYS[1]!))
      control.push(await healthzMs(service.origin))
    }
    assertCountedOnce(answers, 'dead Redis')
    const times = answers.map((x) => x.ms).sort((x, y) => x - y)
    t.diagnostic(
      `dead Redis: median ${percentile(times, 0.5).toFixed(1)} ms, max ${times.at(-1)!.toFixed(1)} ms`,
    )
    assertMedianWithinBound('dead Redis', times, control)
    await service.waitFor((out) => out.includes(UNREACHABLE))
    assert.equal(logged(service, UNREACHABLE).length, 1)
    assert.equal(service.stderr(), '')

    await redis.restart()
    const first = await untilShared(redis, service.origin, KEYS[2]!)
    assert.deepEqual([first.status, first.remaining], [200, BUDGET - 1])
    await service.waitFor((out) => out.includes(BACK))
    assert.equal(logged(service, UNREACHABLE).length, 1)
    assert.equal(logged(service, BACK).length, 1)
  })

  test('a Redis down at start is said once on stderr; limits hold in memory until it answers', {
    timeout: 60_000,
  }, async (t) => {
    const redis = await startOwnRedis(t)
    await redis.kill()
    const service = await startInstance(t, redis.url)
    // Written before the start-up line, but on another pipe.
    await until('the warning is written on stderr', () => service.stderr().endsWith('\n'))
    assert.match(
      service.stderr(),
      /^petstore: rate-limit store \(Redis\) unreachable at start: .+; rate limits are counted per process until it answers\n$/,
    )
    const answers: Answer[] = []
    for (let i = 0; i < BUDGET + 2; i++) answers.push(await list(service.origin, KEYS[0]!))
    assertCountedOnce(answers, 'Redis down at start')

    await redis.restart()
    await untilShared(redis, service.origin, KEYS[1]!)
    await service.waitFor((out) => out.includes(BACK))
    assert.equal(logged(service, UNREACHABLE).length, 0)
    assert.equal(logged(service, BACK).length, 1)
    assert.equal(service.stderr().split('\n').length, 2)
  })
})
