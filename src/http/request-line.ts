// The fields of the `request completed` line, whichever path answered: which operation, which
// key's owner, what status, how long. Headers are never logged, so no key can leak through a log.

export interface CompletedRequest {
  /** Given where the logger does not bind it already (the fast lane and the routes log through the root logger). */
  requestId?: string
  operation: string
  method: string
  url: string | undefined
  status: number
  /**
   * False when the answer was cut short: its connection or stream ended before all of it was
   * written (the client stopped reading, or went away). Lines leave it out otherwise.
   */
  delivered?: boolean
  elapsedMs: number
  apiKeyName: string | undefined
  remoteAddress: string | undefined
}

/** The line's message. */
export const COMPLETED = 'request completed'

/**
 * Longest `url` a line keeps, so that a client's long URLs cannot flood the log. The start of a
 * URL is what tells requests apart, and its length says the rest was there.
 */
export const LOGGED_URL_MAX = 256

/** The URL as logged: at most LOGGED_URL_MAX characters, then `…` and the whole length. */
export function loggedUrl(url: string): string {
  if (url.length <= LOGGED_URL_MAX) return url
  // Never between the two halves of a surrogate pair, which JSON would have to escape.
  const last = url.charCodeAt(LOGGED_URL_MAX - 1)
  const end = last >= 0xd800 && last <= 0xdbff ? LOGGED_URL_MAX - 1 : LOGGED_URL_MAX
  return `${url.slice(0, end)}…(${url.length} characters)`
}

/** The fields of the `request completed` line, in their order, whichever path answered. */
export function requestLine(r: CompletedRequest) {
  return {
    requestId: r.requestId,
    operation: r.operation,
    method: r.method,
    url: r.url === undefined ? undefined : loggedUrl(r.url),
    status: r.status,
    delivered: r.delivered === false ? false : undefined,
    durationMs: durationMs(r.elapsedMs),
    apiKeyName: r.apiKeyName,
    remoteAddress: r.remoteAddress,
  }
}

/** Milliseconds as logged: two decimals. */
function durationMs(elapsedMs: number): number {
  return Math.round(elapsedMs * 100) / 100
}

/**
 * durationMs(elapsedMs) as JSON writes it (`0.4`, `12.05`, `3`), from whole hundredths: cheaper
 * than V8's shortest form of a fraction, and the same text below 2^30 hundredths.
 */
export function durationText(elapsedMs: number): string {
  const hundredths = Math.round(elapsedMs * 100)
  if (!(hundredths >= 0 && hundredths < 2 ** 30)) return String(durationMs(elapsedMs))
  const rest = hundredths % 100
  const whole = (hundredths - rest) / 100
  if (rest === 0) return `${whole}`
  if (rest % 10 === 0) return `${whole}.${rest / 10}`
  return `${whole}.${rest < 10 ? '0' : ''}${rest}`
}
