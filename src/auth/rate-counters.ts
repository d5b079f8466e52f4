// The counters behind the rate limits: fixed windows, in this process's memory or shared in Redis
// behind a circuit breaker that counts in memory while Redis is away.
import type { FastifyBaseLogger } from 'fastify'
import type { Redis } from 'ioredis'
import { LruMap } from 'toad-cache'
import { REDIS_BREAKER_OPEN_MS, withinBound } from './redis.js'
import { RedisLeases } from './redis-leases.js'

export type LimitState = { remaining: number; ttlInSeconds: number; isExceeded: boolean }
export type Limit = { max: number; windowMs: number }

/** Counts one request against the budget of the counter named, in memory or in a shared store. */
export type RateCounter = { take(name: string): LimitState | Promise<LimitState> }

/** Requests per API key, and failed authentications per client network. */
export type RateCounters = { perKey: RateCounter; perAddress: RateCounter }

/** Fixed windows in memory: a window opens at a key's first request and lasts windowMs. */
export class MemoryWindows implements RateCounter {
  /** The least recently used window goes first. */
  private readonly windows = new LruMap<{ count: number; startMs: number }>(100_000)

  constructor(private readonly limit: Limit) {}

  take(key: string): LimitState {
    const { max, windowMs } = this.limit
    const now = Date.now()
    let w = this.windows.get(key)
    if (w === undefined || w.startMs + windowMs <= now) {
      w = { count: 0, startMs: now }
      this.windows.set(key, w)
    }
    w.count++
    return {
      remaining: Math.max(0, max - w.count),
      ttlInSeconds: Math.ceil((windowMs - (now - w.startMs)) / 1000),
      isExceeded: w.count > max,
    }
  }
}

/**
 * In front of a store that may hang or go away: after a failure the store is left alone for
 * openMs, then one probe at a time, off any request, asks whether it is back.
 */
export class Breaker {
  /** While open, when the next probe is due; null while closed. */
  private probeAt: number | null = null
  private probing = false

  /** `onOpen` and `onClose` hear once of each outage. */
  constructor(
    private readonly o: {
      openMs: number
      probe: () => Promise<unknown>
      onOpen: (err: unknown) => void
      onClose: () => void
    },
  ) {}

  /** Whether the store must be left alone now; a probe that is due goes out in the background. */
  isOpen(): boolean {
    if (this.probeAt === null) return false
    if (!this.probing && Date.now() >= this.probeAt) {
      this.probing = true
      this.o.probe().then(
        () => {
          this.probing = false
          this.probeAt = null
          this.o.onClose()
        },
        () => {
          this.probing = false
          this.probeAt = Date.now() + this.o.openMs
        },
      )
    }
    return true
  }

  /** A call to the store failed: leave it alone for openMs. */
  trip(err: unknown): void {
    if (this.probeAt === null) this.o.onOpen(err)
    this.probeAt = Date.now() + this.o.openMs
  }

  /** Opens without telling anyone, probing at the next call: the outage was reported at start. */
  startOpen(): void {
    this.probeAt = Date.now()
  }
}

/**
 * Counts in Redis while the breaker is closed, else in this process's windows: through an outage
 * the limits stay enforced, per process. A count that fails is made in memory too, so every
 * request is counted somewhere. The leases trip the breaker themselves, since their failures may
 * come from calls no request waits for.
 */
export function sharedCounter(
  shared: RedisLeases,
  local: MemoryWindows,
  breaker: Breaker,
): RateCounter {
  return {
    take: (name) =>
      breaker.isOpen() ? local.take(name) : shared.take(name).catch(() => local.take(name)),
  }
}

/** The two budgets' counters: in this process, or in Redis for every process that shares it. */
export function openRateCounters(
  limits: { perKey: Limit; perAddress: Limit },
  redis: Redis | undefined,
  log: Pick<FastifyBaseLogger, 'warn'>,
): RateCounters {
  if (redis === undefined) {
    return {
      perKey: new MemoryWindows(limits.perKey),
      perAddress: new MemoryWindows(limits.perAddress),
    }
  }
  const breaker = new Breaker({
    openMs: REDIS_BREAKER_OPEN_MS,
    probe: () => withinBound(redis.ping()),
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
  const shared = (limit: Limit) =>
    sharedCounter(
      new RedisLeases(redis, limit, (err) => breaker.trip(err)),
      new MemoryWindows(limit),
      breaker,
    )
  return { perKey: shared(limits.perKey), perAddress: shared(limits.perAddress) }
}
