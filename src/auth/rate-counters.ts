// The counters behind the rate limits: fixed windows, in this process's memory or shared in Redis.
import type { FastifyBaseLogger } from 'fastify'
import type { Redis } from 'ioredis'
import { LruMap } from 'toad-cache'
import { Breaker } from './breaker.js'
import { pingWithinBound, REDIS_BREAKER_OPEN_MS } from './redis.js'
import { RedisLeases } from './redis-leases.js'

export interface LimitState {
  max: number
  remaining: number
  ttlInSeconds: number
  isExceeded: boolean
}

export interface Limit {
  max: number
  windowMs: number
}

/** Counts one request against the budget of the counter named, in memory or in a shared store. */
export type RateCounter = (name: string) => Promise<LimitState>

/** Counters kept at most; the least recently used one goes first. */
const MAX_COUNTERS = 100_000

/** Fixed windows in memory: a window opens at a key's first request and lasts windowMs. */
export class MemoryWindows {
  private readonly windows = new LruMap<{ count: number; startMs: number }>(MAX_COUNTERS)

  constructor(
    private readonly limit: Limit,
    private readonly now: () => number = Date.now,
  ) {}

  /** Counts one request against the key's budget. */
  take(key: string): LimitState {
    const { max, windowMs } = this.limit
    const now = this.now()
    let w = this.windows.get(key)
    if (w === undefined || w.startMs + windowMs <= now) {
      w = { count: 0, startMs: now }
      this.windows.set(key, w)
    }
    w.count++
    return {
      max,
      remaining: Math.max(0, max - w.count),
      ttlInSeconds: Math.ceil((windowMs - (now - w.startMs)) / 1000),
      isExceeded: w.count > max,
    }
  }
}

export function memoryCounter(windows: MemoryWindows): RateCounter {
  return async (name) => windows.take(name)
}

/**
 * Counts in the shared store while it answers, and in this process's windows while the breaker
 * is open: through an outage the limits stay enforced, per process. A count that fails is made in
 * memory too, so every request is counted somewhere. The shared store trips the breaker itself,
 * since its failures may come from calls no request waits for.
 */
export function sharedCounter(
  shared: RateCounter,
  local: MemoryWindows,
  breaker: Breaker,
): RateCounter {
  return async (name) => {
    if (breaker.isOpen()) return local.take(name)
    try {
      return await shared(name)
    } catch {
      return local.take(name)
    }
  }
}

export interface RateCounters {
  /** Requests per API key. */
  perKey: RateCounter
  /** Failed authentications per client network (an IPv4 address, an IPv6 /64). */
  perAddress: RateCounter
}

/**
 * The two budgets' counters: in this process, or in Redis for every process that shares it, with
 * a breaker that counts in memory while Redis is away.
 */
export function openRateCounters(
  limits: { perKey: Limit; perAddress: Limit },
  redis: Redis | undefined,
  log: Pick<FastifyBaseLogger, 'warn'>,
): RateCounters {
  if (redis === undefined) {
    return {
      perKey: memoryCounter(new MemoryWindows(limits.perKey)),
      perAddress: memoryCounter(new MemoryWindows(limits.perAddress)),
    }
  }
  const breaker = new Breaker({
    openMs: REDIS_BREAKER_OPEN_MS,
    probe: () => pingWithinBound(redis),
    onOpen: (err) =>
      log.warn(
        { err },
        'rate-limit store (Redis) unreachable: limits are counted per process until it answers',
      ),
    // At the level of the outage's line, so that a log read at `warn` shows its end too.
    onClose: () => log.warn('rate-limit store (Redis) reachable again: limits are shared'),
  })
  // Not connected at start: openRedis has said so already.
  if (redis.status !== 'ready') breaker.startOpen()
  const shared = (limit: Limit) => {
    const leases = new RedisLeases(redis, limit, (err) => breaker.trip(err))
    return sharedCounter((name) => leases.take(name), new MemoryWindows(limit), breaker)
  }
  return { perKey: shared(limits.perKey), perAddress: shared(limits.perAddress) }
}
