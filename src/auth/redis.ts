// Redis as the store of the shared rate-limit counters: the client and the bound on its commands.
import { once } from 'node:events'
import { setTimeout as delay } from 'node:timers/promises'
import type { Redis } from 'ioredis'

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
 * The client of the shared counters: it fails fast while Redis is away (no offline queue) and
 * reconnects by itself. The start waits for the first connection so the first requests are
 * counted; a Redis that is down is said once and does not stop the start.
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
  const failed = await Promise.race([
    once(redis, 'ready').then(
      () => null,
      (e: Error) => e,
    ),
    delay(REDIS_CONNECT_TIMEOUT_MS + 500, new Error('no connection'), { ref: false }),
  ])
  if (failed !== null) {
    err.write(
      `petstore: rate-limit store (Redis) unreachable at start: ${failed.message}; rate limits are counted per process until it answers\n`,
    )
  }
  return redis
}

/**
 * `pending`, or a rejection once it has taken longer than the bound. Not ioredis's commandTimeout:
 * this timer looks once more round the event loop before giving up, since after a stall of this
 * process the answer may be waiting unread, and timers run before sockets are read.
 */
export function withinBound<T>(pending: Promise<T>): Promise<T> {
  let timer: NodeJS.Timeout | undefined
  const late = new Promise<never>((_, reject) => {
    const giveUp = () =>
      reject(new Error(`Redis did not answer within ${REDIS_COMMAND_BOUND_MS} ms`))
    timer = setTimeout(() => setImmediate(giveUp), REDIS_COMMAND_BOUND_MS)
  })
  return Promise.race([pending, late]).finally(() => clearTimeout(timer))
}
