// getPet is deprecated: the headers every response of it carries, and the count of who calls it.
import type { FastifyBaseLogger } from 'fastify'
import type { Clock } from '../clock.js'
import type { DeprecatedCalls } from '../observability/metrics.js'

/** Removal of getPet, fixed by the interface specification; every text about it derives from it. */
export const GETPET_SUNSET = new Date('2030-12-05T00:00:00Z')

/** The sunset as the header, the 410 message and the OpenAPI descriptions write it. */
export const getPetSunset = {
  httpDate: GETPET_SUNSET.toUTCString(), // RFC 8594 `Sunset`: `Thu, 05 Dec 2030 00:00:00 GMT`
  isoDay: GETPET_SUNSET.toISOString().slice(0, 10), // `2030-12-05`
  longDay: GETPET_SUNSET.toLocaleDateString('en-GB', { dateStyle: 'long', timeZone: 'UTC' }),
}

/** The `Link` every getPet response carries: the operation to use instead. */
export const SUCCESSOR_LINK = '</v1/pets>; rel="successor-version"'

/** RFC 9745 `Deprecation: @<epoch-seconds>`, RFC 8594 `Sunset`, and the successor link. */
export function deprecationHeaders(deprecatedAt: Date): Record<string, string> {
  return {
    deprecation: `@${Math.floor(deprecatedAt.getTime() / 1000)}`,
    sunset: getPetSunset.httpDate,
    link: SUCCESSOR_LINK,
  }
}

type WarnLog = Pick<FastifyBaseLogger, 'warn'>

/** Counts calls to deprecated operations per operation and key, for the log and the metrics. A
 * key's first call is logged as a warning, later ones at most once per `logIntervalMs`. */
export class DeprecatedCallCounter {
  /** By `operation\nkey id`; `loggedAt` is the clock time (ms) of the key's last warning. */
  private readonly calls = new Map<string, DeprecatedCalls & { loggedAt: number }>()

  constructor(
    private readonly clock: Clock,
    private readonly logIntervalMs: number,
  ) {}

  /** `log` is the request's logger. */
  record(log: WarnLog, operation: string, key: { id: string; name: string }): void {
    const now = this.clock.nowMs()
    const id = `${operation}\n${key.id}`
    let calls = this.calls.get(id)
    if (calls === undefined) {
      calls = { operation, apiKeyName: key.name, count: 0, loggedAt: Number.NEGATIVE_INFINITY }
      this.calls.set(id, calls)
    }
    calls.count++
    if (now - calls.loggedAt >= this.logIntervalMs) {
      calls.loggedAt = now
      log.warn(
        {
          deprecatedOperation: operation,
          apiKeyId: key.id,
          apiKeyName: key.name,
          callsByKey: calls.count,
        },
        'deprecated operation called',
      )
    }
  }

  counts(): Iterable<DeprecatedCalls> {
    return this.calls.values()
  }
}
