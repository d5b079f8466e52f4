// The limits every transport enforces alike, and the options Node's HTTP/1 and TLS servers take.

export interface TransportLimits {
  /** A request (and a TLS handshake) must arrive within this; the send deadline too. */
  requestTimeoutMs: number
  /** An idle connection, or an HTTP/2 session with no open stream, closes after this. */
  keepAliveTimeoutMs: number
}

/** Streams one HTTP/2 session may have open at once (nginx allows 128). */
export const MAX_CONCURRENT_STREAMS = 100

/** How often the limits are looked at: a twentieth of the request timeout, a second at most. */
export function checkEveryMs(limits: TransportLimits): number {
  return Math.min(1000, Math.ceil(limits.requestTimeoutMs / 20))
}

/**
 * Node's HTTP/1 limits, for every server that parses HTTP/1.1. Node cuts a request only with
 * headersTimeout at most its requestTimeout, and looks every connectionsCheckingInterval
 * (30 s by default).
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
