// The counters behind the rate limits: fixed windows, in this process's memory or shared in Redis.
import type { FastifyRequest } from 'fastify'
import { LruMap } from 'toad-cache'
import type { Breaker } from './breaker.js'

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

/** Counts one request against its budget; a shared store answers asynchronously. */
export type RateCounter = (request: FastifyRequest) => LimitState | Promise<LimitState>

/** Counters kept at most; the least recently used one goes first. */
const MAX_COUNTERS = 100_000

/**
 * Fixed windows in memory (a window opens at a key's first request and lasts windowMs), counted
 * synchronously: a promise per count would cost every request (docs/performance.md).
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
 * Counts in the shared store while it answers, and in this process's windows while the breaker
 * is open: through an outage the limits stay enforced, per process. A count that fails is made in
 * memory too, so every request is counted somewhere.
 */
export function sharedCounter(
  shared: (name: string) => Promise<LimitState>,
  local: MemoryWindows,
  breaker: Breaker,
  keyOf: (request: FastifyRequest) => string,
): RateCounter {
  return (request) => {
    const name = keyOf(request)
    if (breaker.isOpen()) return local.take(name)
    return shared(name).catch((err: unknown) => {
      breaker.trip(err)
      return local.take(name)
    })
  }
}
