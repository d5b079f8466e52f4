// Leases of shared budgets on a real Redis (the shared one on 127.0.0.1:6379, counters named per
// run): what a lease answers at once, what waits for Redis, what Redis holds, and when a window
// ends. Across instances and through HTTP: test/deploy/multi-instance.test.ts.
import assert from 'node:assert/strict'
import { randomBytes } from 'node:crypto'
import { type TestContext, test } from 'node:test'
import { Redis } from 'ioredis'
import {
  Breaker,
  type LimitState,
  MemoryWindows,
  sharedCounter,
} from '../../src/auth/rate-counters.js'
import { leaseSize, RedisLeases, redisCounterKey } from '../../src/auth/redis-leases.js'
import { storeIndependent } from '../support/stores.js'
import { until } from '../support/wait.js'

const REDIS_URL = 'redis://127.0.0.1:6379'

async function connected(t: TestContext): Promise<Redis> {
  const redis = new Redis(REDIS_URL, { maxRetriesPerRequest: 1 })
  t.after(() => redis.quit())
  await redis.ping()
  return redis
}

/** The names of the commands `redis` sends from now on, as it sends them. */
function commandsSent(redis: Redis): string[] {
  const sent: string[] = []
  const send = redis.sendCommand.bind(redis)
  redis.sendCommand = (command, stream) => {
    sent.push(command.name)
    return send(command, stream)
  }
  return sent
}

/** A counter name no other run uses. */
const freshName = () => `test:${randomBytes(6).toString('hex')}`

const served = (remaining: number) => ({ remaining, isExceeded: false })
const spent = { remaining: 0, isExceeded: true }
const shape = (s: LimitState) => ({ remaining: s.remaining, isExceeded: s.isExceeded })

storeIndependent(() => {
  test('a lease is a sixty-fourth of the budget, at least one unit', () => {
    assert.deepEqual(
      [1, 63, 64, 127, 128, 6000, 100_000_000].map(leaseSize),
      [1, 1, 1, 1, 2, 93, 1_562_500],
    )
  })

  test('the first request waits for a lease; the next ones are answered at once, renewed at half', async (t) => {
    const redis = await connected(t)
    const failures: unknown[] = []
    const limit = { max: 640, windowMs: 60_000 }
    // The leases' own connection, so that the commands it sends can be counted.
    const client = await connected(t)
    const sent = commandsSent(client)
    const leases = new RedisLeases(client, limit, (e) => failures.push(e))
    const name = freshName()
    const key = redisCounterKey(limit, name)
    assert.equal(key, `petstore-rl:640:60000:${name}`)
    assert.deepEqual(shape(await leases.take(name)), served(639))
    assert.equal(sent.length, 1, `the lease's first grant: ${sent}`)
    assert.equal(await redis.get(key), '10')
    // Units 2..4 from the lease, with no command sent; the fifth leaves 5, half of it, and renews
    // in the background.
    for (let n = 2; n <= 4; n++) {
      assert.deepEqual(shape(await leases.take(name)), served(640 - n), `request ${n}`)
    }
    assert.equal(sent.length, 1, `units from the lease: ${sent}`)
    assert.deepEqual(shape(await leases.take(name)), served(635))
    assert.deepEqual(shape(await leases.take(name)), served(634))
    await until('the renewal reaches Redis', async () => (await redis.get(key)) === '20')
    const ttl = await redis.pttl(key)
    assert.ok(ttl > 55_000 && ttl <= 60_000, `PTTL ${ttl}`)
    assert.deepEqual(failures, [])
  })

  test('requests waiting together share a renewal; a spent window refuses at once until it ends', async (t) => {
    const redis = await connected(t)
    const limit = { max: 5, windowMs: 1500 }
    const leases = new RedisLeases(redis, limit, (err) => assert.fail(String(err)))
    const name = freshName()
    const key = redisCounterKey(limit, name)
    const answers = await Promise.all(Array.from({ length: 8 }, () => leases.take(name)))
    assert.deepEqual(answers.map(shape), [
      served(4),
      served(3),
      served(2),
      served(1),
      served(0),
      spent,
      spent,
      spent,
    ])
    assert.equal(await redis.get(key), '5')
    const sent = commandsSent(redis)
    const refused = await leases.take(name)
    assert.deepEqual(sent, [], 'a spent window is known without asking Redis')
    assert.equal(refused.isExceeded, true)
    assert.ok(refused.ttlInSeconds >= 1 && refused.ttlInSeconds <= 2)

    // The window ends here no later than in Redis: the next request opens a new one there.
    await new Promise((resolve) => setTimeout(resolve, 1600))
    assert.deepEqual(shape(await leases.take(name)), served(4))
    assert.equal(await redis.get(key), '1')
  })

  test('a counter is kept under its budget and window: other settings count apart, the same ones share', async (t) => {
    const redis = await connected(t)
    const name = freshName()
    const fail = (err: unknown) => assert.fail(String(err))
    const old = new RedisLeases(redis, { max: 3, windowMs: 60_000 }, fail)
    for (const left of [2, 1, 0]) assert.deepEqual(shape(await old.take(name)), served(left))
    assert.equal((await old.take(name)).isExceeded, true)
    // A lower budget or another window starts from nothing, not from the 3 already spent.
    const lower = new RedisLeases(redis, { max: 2, windowMs: 60_000 }, fail)
    assert.deepEqual(shape(await lower.take(name)), served(1))
    const shorter = new RedisLeases(redis, { max: 3, windowMs: 30_000 }, fail)
    assert.deepEqual(shape(await shorter.take(name)), served(2))
    // Another instance with the lower budget spends the same counter.
    const same = new RedisLeases(redis, { max: 2, windowMs: 60_000 }, fail)
    assert.deepEqual(shape(await same.take(name)), served(0))
    assert.equal((await same.take(name)).isExceeded, true)
    assert.deepEqual(
      await redis.mget(
        [
          { max: 3, windowMs: 60_000 },
          { max: 2, windowMs: 60_000 },
          { max: 3, windowMs: 30_000 },
        ].map((limit) => redisCounterKey(limit, name)),
      ),
      ['3', '2', '1'],
    )
  })

  test('a failed renewal rejects its waiters and opens the breaker: the request is counted in memory', async (t) => {
    const redis = new Redis('redis://127.0.0.1:1', {
      lazyConnect: true,
      maxRetriesPerRequest: 0,
      enableOfflineQueue: false,
    })
    redis.on('error', () => undefined)
    t.after(() => redis.disconnect())
    const opened: unknown[] = []
    const breaker = new Breaker({
      openMs: 60_000,
      probe: () => Promise.reject(new Error('still away')),
      onOpen: (err) => opened.push(err),
      onClose: assert.fail,
    })
    const limit = { max: 640, windowMs: 60_000 }
    const leases = new RedisLeases(redis, limit, (err) => breaker.trip(err))
    const count = sharedCounter(leases, new MemoryWindows(limit), breaker)
    const name = freshName()
    const sent = commandsSent(redis)
    assert.deepEqual(shape(await count.take(name)), served(639))
    assert.equal(opened.length, 1)
    assert.equal(sent.length, 1, `the failed grant: ${sent}`)
    // Left alone while the breaker is open: counted in memory.
    assert.deepEqual(shape(await count.take(name)), served(638))
    assert.equal(sent.length, 1, `nothing sent while the breaker is open: ${sent}`)
  })
})
