// Redis as the store of the shared rate-limit counters: the client and the bound on its commands.
import type { Redis } from 'ioredis'

/** Prefix of every counter in Redis; redisCounterKey (redis-leases.ts) names the rest. */
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

/** Resolves when Redis answers a PING within the bound: what the breaker's probe asks. */
export function pingWithinBound(redis: Redis): Promise<unknown> {
  return withinBound(redis.ping())
}
