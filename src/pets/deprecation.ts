// getPet is deprecated: the headers every response of it carries, and the count of who calls it.
import type { Clock } from '../clock.js'
import type { DeprecatedCalls } from '../observability/metrics.js'

/** Removal of getPet, fixed by the interface specification; every text about it derives from it. */
export const GETPET_SUNSET = new Date('2030-12-05T00:00:00Z')

/** The sunset as the header, the 410 message and the OpenAPI descriptions write it. */
export const getPetSunset = {
  /** RFC 8594 `Sunset` value, an HTTP date: `Thu, 05 Dec 2030 00:00:00 GMT`. */
  httpDate: GETPET_SUNSET.toUTCString(),
  /** `2030-12-05`. */
  isoDay: GETPET_SUNSET.toISOString().slice(0, 10),
  /** `5 December 2030`. */
  longDay: new Intl.DateTimeFormat('en-GB', {
    day: 'numeric',
    month: 'long',
    year: 'numeric',
    timeZone: 'UTC',
  }).format(GETPET_SUNSET),
}

/** The `Link` every getPet response carries: the operation to use instead. */
export const SUCCESSOR_LINK = '</v1/pets>; rel="successor-version"'

export type DeprecationHeaders = Record<'deprecation' | 'sunset' | 'link', string>

/** RFC 9745 `Deprecation: @<epoch-seconds>`, RFC 8594 `Sunset`, and the successor link. */
export function deprecationHeaders(deprecatedAt: Date): DeprecationHeaders {
  return {
    deprecation: `@${Math.floor(deprecatedAt.getTime() / 1000)}`,
    sunset: getPetSunset.httpDate,
    link: SUCCESSOR_LINK,
  }
}

/** Whether getPet is past its sunset at `nowMs` (epoch milliseconds, Clock.nowMs). */
export function isSunset(nowMs: number): boolean {
  return nowMs >= GETPET_SUNSET.getTime()
}

/** Where the line about each call goes: the request's logger. */
export interface WarnLog {
  warn(fields: object, msg: string): void
}

interface KeyCalls {
  count: number
  /** Clock time (ms) of this key's last warning. */
  loggedAt: number
  name: string
}

/**
 * Counts calls to deprecated operations per operation and key, for the log and the metrics. A
 * key's first call is logged as a warning, later ones at most once per `logIntervalMs`.
 */
export class DeprecatedCallCounter {
  /** By operation, then by key id. */
  private readonly calls = new Map<string, Map<string, KeyCalls>>()

  constructor(
    private readonly clock: Clock,
    private readonly logIntervalMs: number,
  ) {}

  record(log: WarnLog, operation: string, key: { id: string; name: string }): number {
    const now = this.clock.nowMs()
    let byKey = this.calls.get(operation)
    if (byKey === undefined) {
      byKey = new Map()
      this.calls.set(operation, byKey)
    }
    let calls = byKey.get(key.id)
    if (calls === undefined) {
      calls = { count: 0, loggedAt: Number.NEGATIVE_INFINITY, name: key.name }
      byKey.set(key.id, calls)
    }
    const n = ++calls.count
    if (now - calls.loggedAt >= this.logIntervalMs) {
      calls.loggedAt = now
      log.warn(
        { deprecatedOperation: operation, apiKeyId: key.id, apiKeyName: key.name, callsByKey: n },
        'deprecated operation called',
      )
    }
    return n
  }

  *counts(): Iterable<DeprecatedCalls> {
    for (const [operation, byKey] of this.calls) {
      for (const calls of byKey.values()) {
        yield { operation, apiKeyName: calls.name, count: calls.count }
      }
    }
  }
}
