// getPet is deprecated: the headers every response of it carries, and the count of who calls it.
import { GETPET_SUNSET } from '../config.js'

export type DeprecationHeaders = Record<'deprecation' | 'sunset' | 'link', string>

/** RFC 9745 `Deprecation: @<epoch-seconds>`, RFC 8594 `Sunset`, and the successor link. */
export function deprecationHeaders(deprecatedAt: Date): DeprecationHeaders {
  return {
    deprecation: `@${Math.floor(deprecatedAt.getTime() / 1000)}`,
    sunset: GETPET_SUNSET.toUTCString(),
    link: '</v1/pets>; rel="successor-version"',
  }
}

export function isSunset(now: Date): boolean {
  return now.getTime() >= GETPET_SUNSET.getTime()
}

/** Where the line about each call goes: a request's logger, or the hot path's. */
export interface WarnLog {
  warn(fields: object, msg: string): void
}

/**
 * Counts calls to the deprecated operation per API key and logs each with the running count;
 * `onCall` hears of each call too (the metrics' count by key name).
 */
export class DeprecatedCallCounter {
  private readonly counts = new Map<string, number>()

  constructor(private readonly onCall?: (operation: string, apiKeyName: string) => void) {}

  record(log: WarnLog, operation: string, key: { id: string; name: string }): number {
    const n = (this.counts.get(key.id) ?? 0) + 1
    this.counts.set(key.id, n)
    log.warn(
      { deprecatedOperation: operation, apiKeyId: key.id, apiKeyName: key.name, callsByKey: n },
      'deprecated operation called',
    )
    this.onCall?.(operation, key.name)
    return n
  }

  snapshot(): ReadonlyMap<string, number> {
    return this.counts
  }
}
