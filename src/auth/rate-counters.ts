// The counters behind the rate limits: fixed windows, in this process's memory or shared in Redis.
import type { FastifyInstance, FastifyRequest } from 'fastify'
import { LruMap } from 'toad-cache'

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

/** Counts one request against its budget; a shared store answers asynchronously and may fail. */
export type RateCounter = (request: FastifyRequest) => LimitState | Promise<LimitState>

/** Counters kept at most; the least recently used one goes first (as @fastify/rate-limit's). */
const MAX_COUNTERS = 100_000

/**
 * Fixed windows in memory, with @fastify/rate-limit's in-memory semantics (a window opens at a
 * key's first request and lasts windowMs), counted synchronously: the plugin's limiter adds its
 * promises and route lookups to every request (docs/performance.md).
 */
export class MemoryWindows {
  private readonly windows = new LruMap<{ count: number; startMs: number }>(MAX_COUNTERS)

  constructor(private readonly limit: Limit) {}

  /** Counts one request against the key's budget. */
  take(key: string): LimitState {
    return this.count(key, false)!
  }

  /**
   * Counts one request if the budget has room for it, and returns null, counting nothing, if it
   * has not (the hot path then leaves the request to the hook, which refuses it).
   */
  takeIfRoom(key: string): LimitState | null {
    return this.count(key, true)
  }

  private count(key: string, onlyIfRoom: boolean): LimitState | null {
    const { max, windowMs } = this.limit
    const now = Date.now()
    let w = this.windows.get(key)
    if (w === undefined || w.startMs + windowMs <= now) {
      w = { count: 0, startMs: now }
      this.windows.set(key, w)
    } else if (onlyIfRoom && w.count >= max) {
      return null
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

export function memoryCounter(
  windows: MemoryWindows,
  keyOf: (request: FastifyRequest) => string,
): RateCounter {
  return (request) => windows.take(keyOf(request))
}

/**
 * Windows in Redis, one budget for every process that shares it, through @fastify/rate-limit
 * (its Lua script makes count-and-expire atomic). The plugin must be registered on `app`.
 */
export function pluginCounter(
  app: FastifyInstance,
  limit: Limit,
  keyOf: (request: FastifyRequest) => string,
): RateCounter {
  const limiter = app.createRateLimit({
    max: limit.max,
    timeWindow: limit.windowMs,
    keyGenerator: keyOf,
  })
  return (request) => limiter(request) as Promise<LimitState>
}
