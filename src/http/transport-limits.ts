// The limits every transport enforces alike (plain HTTP, HTTPS, HTTP/2 and its HTTP/1.1
// fallback), and the options Node's HTTP/1 and TLS servers take them as.

export interface TransportLimits {
  /**
   * Headers and body of a request (and a TLS handshake) must arrive within this, and an answer
   * whose client takes none of its bytes for this long is cut (the send deadline).
   */
  requestTimeoutMs: number
  /** An idle connection, or an HTTP/2 session with no open stream, closes after this. */
  keepAliveTimeoutMs: number
}

/** Streams one HTTP/2 session may have open at once (nginx allows 128). */
export const MAX_CONCURRENT_STREAMS = 100

/**
 * How often the limits are looked at: a twentieth of the request timeout, at most every second,
 * so that a limit holds within that of its time.
 */
export function checkEveryMs(limits: TransportLimits): number {
  return Math.min(1000, Math.ceil(limits.requestTimeoutMs / 20))
}

/**
 * Node's HTTP/1 limits, for every server that parses HTTP/1.1. Node cuts a request only with
 * headersTimeout at most its requestTimeout, and looks for one past its time every
 * connectionsCheckingInterval (by default 30 s, up to twice the timeout).
 */
export function http1Limits(limits: TransportLimits) {
  return {
    requestTimeout: limits.requestTimeoutMs,
    headersTimeout: limits.requestTimeoutMs,
    keepAliveTimeout: limits.keepAliveTimeoutMs,
    connectionsCheckingInterval: checkEveryMs(limits),
  }
}

/** TLS server options: a handshake is part of the request's time, not a separate two minutes. */
export function tlsLimits(limits: TransportLimits, http2: boolean) {
  return {
    handshakeTimeout: limits.requestTimeoutMs,
    ...(http2 ? { settings: { maxConcurrentStreams: MAX_CONCURRENT_STREAMS } } : {}),
  }
}
