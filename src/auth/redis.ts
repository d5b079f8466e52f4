// Redis as the store of the shared rate-limit counters: the client, the count and its bound.
import type { Redis } from 'ioredis'
import type { Limit, LimitState } from './rate-counters.js'

/** Prefix of every counter in Redis; the rest is the counter's name, e.g. `default:<key id>`. */
export const REDIS_NAMESPACE = 'petstore-rl:'

const REDIS_CONNECT_TIMEOUT_MS = 2000

/**
 * How long a Redis command may take before Redis counts as away: room for a loaded host and Redis's
 * short pauses, while a hung Redis costs the requests in flight less than a client would notice.
 */
export const REDIS_COMMAND_BOUND_MS = 50

/**
 * How long Redis is left alone after a command failed or took too long, before a PING off any
 * request asks whether it is back: how soon limits are shared again, and how often a Redis that
 * answers PING but not counts costs the requests in flight one bound.
 */
export const REDIS_BREAKER_OPEN_MS = 5000

/**
 * The client of the shared counters: it fails fast while Redis is away and reconnects by itself.
 * The start waits for the first connection so the first requests are counted; a Redis that is
 * down is said once and does not stop the start. Callers bound each command (`withinBound`).
 */
export async function openRedis(url: string, err: NodeJS.WritableStream): Promise<Redis> {
  // Loaded only when asked for: most deployments count in memory.
  const { Redis } = await import('ioredis')
  const redis = new Redis(url, {
    connectTimeout: REDIS_CONNECT_TIMEOUT_MS,
    maxRetriesPerRequest: 1,
    enableOfflineQueue: false,
  })
  // Outages while serving are reported by the counters' breaker; without a listener ioredis would
  // print every failed reconnection.
  redis.on('error', () => undefined)
  await new Promise<void>((resolve) => {
    const settled = (e?: Error) => {
      clearTimeout(timer)
      redis.off('ready', settled)
      redis.off('error', settled)
      if (e !== undefined) {
        err.write(
          `petstore: rate-limit store (Redis) unreachable at start: ${e.message}; rate limits are counted per process until it answers\n`,
        )
      }
      resolve()
    }
    const timer = setTimeout(
      () => settled(new Error('no connection')),
      REDIS_CONNECT_TIMEOUT_MS + 500,
    )
    redis.once('ready', settled)
    redis.once('error', settled)
  })
  return redis
}

/**
 * `pending`, or a rejection once it has taken longer than `ms`. The timer looks once more round the
 * event loop before giving up: after a stall of this process the answer may be waiting unread,
 * and timers run before sockets are read.
 */
export function withinBound<T>(pending: Promise<T>, ms = REDIS_COMMAND_BOUND_MS): Promise<T> {
  return new Promise<T>((resolve, reject) => {
    const timer = setTimeout(() => {
      setImmediate(() => reject(new Error(`Redis did not answer within ${ms} ms`)))
    }, ms)
    pending.then(
      (value) => {
        clearTimeout(timer)
        resolve(value)
      },
      (error: unknown) => {
        clearTimeout(timer)
        reject(error)
      },
    )
  })
}

/**
 * One count, atomically: a window opens at a counter's first request and lasts windowMs (ARGV[1]).
 * A counter found without an expiry, which this script never leaves, is given one rather than
 * refusing its key for ever. Answers the count and the window's milliseconds left.
 */
const COUNT_SCRIPT = `
local count = redis.call('INCR', KEYS[1])
local ttl = -1
if count > 1 then ttl = redis.call('PTTL', KEYS[1]) end
if ttl < 0 then
  redis.call('PEXPIRE', KEYS[1], ARGV[1])
  ttl = tonumber(ARGV[1])
end
return {count, ttl}
`
const COUNT_COMMAND = 'petstoreRateCount'
type CountCommand = (key: string, windowMs: number) => Promise<[number, number]>

/** Fixed windows in Redis, one budget for every process that shares it. */
export class RedisWindows {
  private readonly count: CountCommand

  constructor(
    private readonly redis: Redis,
    private readonly limit: Limit,
  ) {
    // ioredis sends the script's digest, and the script itself only when Redis lacks it.
    if (!(COUNT_COMMAND in redis)) {
      redis.defineCommand(COUNT_COMMAND, { numberOfKeys: 1, lua: COUNT_SCRIPT })
    }
    this.count = (redis as unknown as Record<typeof COUNT_COMMAND, CountCommand>)[COUNT_COMMAND]
  }

  /** Counts one request against the counter `name`; rejects past the bound or on any failure. */
  async take(name: string): Promise<LimitState> {
    const { max, windowMs } = this.limit
    const [count, ttlMs] = await withinBound(
      this.count.call(this.redis, REDIS_NAMESPACE + name, windowMs),
    )
    return {
      max,
      remaining: Math.max(0, max - count),
      ttlInSeconds: Math.ceil(ttlMs / 1000),
      isExceeded: count > max,
    }
  }
}

/** Resolves when Redis answers a PING within the bound: what the breaker's probe asks. */
export function pingWithinBound(redis: Redis): Promise<unknown> {
  return withinBound(redis.ping())
}
