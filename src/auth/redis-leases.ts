// Shared rate-limit budgets spent from leases: an instance reserves a share of a key's window in
// Redis with one atomic call and spends it in memory, so a request waits for no round trip.
import type { Redis } from 'ioredis'
import { LruMap } from 'toad-cache'
import type { Limit, LimitState } from './rate-counters.js'
import { withinBound } from './redis.js'

/**
 * A lease is a sixty-fourth of a window's budget (at least 1): what one instance may hold unspent,
 * so what the other instances may be refused early (docs/scaling.md, "How precise").
 */
export const leaseSize = (max: number): number => Math.max(1, Math.floor(max / 64))

/**
 * Reserves up to ARGV[3] units of the window's budget ARGV[2]. The window opens at its first
 * reservation and lasts ARGV[1] ms; one found without an expiry, which this script never leaves,
 * is given one rather than refusing its key for ever. Answers the units reserved in the window so
 * far (by every instance), the window's milliseconds left, and the units granted by this call.
 */
const LEASE_SCRIPT = `
local reserved = tonumber(redis.call('GET', KEYS[1]) or '0')
local grant = math.max(0, math.min(tonumber(ARGV[3]), tonumber(ARGV[2]) - reserved))
if grant > 0 then reserved = redis.call('INCRBY', KEYS[1], grant) end
local ttl = redis.call('PTTL', KEYS[1])
if ttl == -1 then redis.call('PEXPIRE', KEYS[1], ARGV[1]) end
if ttl < 0 then ttl = tonumber(ARGV[1]) end
return {reserved, ttl, grant}
`
type LeaseRedis = Redis & {
  petstoreRateLease(
    key: string,
    windowMs: number,
    max: number,
    want: number,
  ): Promise<[number, number, number]>
}

/** One key's share of its current window, held by this instance. */
interface Lease {
  /** Units reserved here and not yet spent. */
  left: number
  /** Units reserved in the window by every instance, as Redis last said. */
  reserved: number
  /** When the window ends, by this process's clock; never later than Redis's own end. */
  endsAt: number
  /** Redis had fewer units than asked: the window's whole budget is reserved. */
  exhausted: boolean
  renewing: boolean
  /** Requests that found no unit left, answered when the renewal lands. */
  waiters: { resolve: (state: LimitState) => void; reject: (err: unknown) => void }[]
}

/**
 * The Redis key of the counter `name` under `limit`. The budget and the window are part of it: an
 * instance with other settings (during a rolling change of them) counts apart, from a fresh window,
 * rather than being judged by a count made against another budget.
 */
export function redisCounterKey(limit: Limit, name: string): string {
  return `petstore-rl:${limit.max}:${limit.windowMs}:${name}`
}

/** One budget per window for every instance that shares the Redis, spent from leases. */
export class RedisLeases {
  /** The least recently used lease goes first, its unspent units with it. */
  private readonly leases = new LruMap<Lease>(100_000)
  private readonly redis: LeaseRedis
  private readonly size: number

  /** `onFailure` hears of every call that failed or took too long, including background ones. */
  constructor(
    redis: Redis,
    private readonly limit: Limit,
    private readonly onFailure: (err: unknown) => void,
  ) {
    // ioredis sends the script's digest, and the script itself only when Redis lacks it.
    redis.defineCommand('petstoreRateLease', { numberOfKeys: 1, lua: LEASE_SCRIPT })
    this.redis = redis as LeaseRedis
    this.size = leaseSize(limit.max)
  }

  /**
   * Spends one unit of the counter `name`: from the lease held here while it lasts, with no round
   * trip (renewed in the background when half spent), else once Redis has granted more. Rejects
   * when Redis fails.
   */
  async take(name: string): Promise<LimitState> {
    const now = Date.now()
    let lease = this.leases.get(name)
    if (lease === undefined || lease.endsAt <= now) {
      lease = {
        left: 0,
        reserved: 0,
        endsAt: Infinity,
        exhausted: false,
        renewing: false,
        waiters: [],
      }
      this.leases.set(name, lease)
    }
    if (lease.left > 0 && lease.waiters.length === 0) {
      lease.left--
      if (lease.left <= this.size >> 1 && !lease.exhausted && !lease.renewing) {
        this.renew(name, lease)
      }
      return this.state(lease, now, false)
    }
    if (lease.exhausted) return this.state(lease, now, true)
    return new Promise((resolve, reject) => {
      lease.waiters.push({ resolve, reject })
      if (!lease.renewing) this.renew(name, lease)
    })
  }

  /** Asks Redis for more units; then serves the waiters in arrival order, or refuses them. */
  private renew(name: string, lease: Lease): void {
    lease.renewing = true
    const { max, windowMs } = this.limit
    const want = Math.max(this.size, lease.waiters.length)
    const sentAt = Date.now()
    const key = redisCounterKey(this.limit, name)
    withinBound(this.redis.petstoreRateLease(key, windowMs, max, want)).then(
      ([reserved, ttlMs, grant]) => {
        lease.renewing = false
        // Redis's window ends ttlMs after the script ran, which was after sentAt.
        const endsAt = sentAt + ttlMs
        const newWindow =
          lease.endsAt === Infinity || reserved === grant || endsAt > lease.endsAt + windowMs / 2
        lease.left = newWindow ? grant : lease.left + grant
        lease.endsAt = newWindow ? endsAt : Math.min(lease.endsAt, endsAt)
        lease.reserved = reserved
        lease.exhausted = grant < want
        const now = Date.now()
        while (lease.waiters.length > 0 && lease.left > 0) {
          lease.left--
          lease.waiters.shift()!.resolve(this.state(lease, now, false))
        }
        if (lease.waiters.length === 0) return
        if (!lease.exhausted) return this.renew(name, lease)
        for (const w of lease.waiters.splice(0)) w.resolve(this.state(lease, now, true))
      },
      (err: unknown) => {
        lease.renewing = false
        for (const w of lease.waiters.splice(0)) w.reject(err)
        this.onFailure(err)
      },
    )
  }

  /** Served: what is left here and unreserved in Redis (others' unspent units are not counted). */
  private state(lease: Lease, now: number, isExceeded: boolean): LimitState {
    return {
      remaining: isExceeded ? 0 : Math.max(0, this.limit.max - lease.reserved + lease.left),
      ttlInSeconds: Math.max(1, Math.ceil((lease.endsAt - now) / 1000)),
      isExceeded,
    }
  }
}
