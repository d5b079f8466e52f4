// The limits every transport enforces alike (plain HTTP, HTTPS, HTTP/2 and its HTTP/1.1
// fallback): how long a TLS handshake and a request may take to arrive, how long an idle
// connection stays open, and how many streams one HTTP/2 session may hold.
import type { Server } from 'node:http'
import {
  type Http2SecureServer,
  type Http2ServerRequest,
  constants as h2,
  type ServerHttp2Session,
  type ServerHttp2Stream,
} from 'node:http2'
import { PassThrough, type Readable } from 'node:stream'
import { requestTimedOut } from './error-handling.js'

export interface TransportLimits {
  /** Headers and body of a request (and a TLS handshake) must arrive within this. */
  requestTimeoutMs: number
  /** An idle connection, or an HTTP/2 session with no open stream, closes after this. */
  keepAliveTimeoutMs: number
}

/** Streams one HTTP/2 session may have open at once (nginx allows 128). */
export const MAX_CONCURRENT_STREAMS = 100

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
    connectionsCheckingInterval: Math.min(1000, Math.ceil(limits.requestTimeoutMs / 20)),
  }
}

/** TLS server options: a handshake is part of the request's time, not a separate two minutes. */
export function tlsLimits(limits: TransportLimits, http2: boolean) {
  return {
    handshakeTimeout: limits.requestTimeoutMs,
    ...(http2 ? { settings: { maxConcurrentStreams: MAX_CONCURRENT_STREAMS } } : {}),
  }
}

/**
 * Node's HTTP/2 server applies none of its HTTP/1 limits to its sessions, and laxer defaults to
 * its HTTP/1.1 fallback: the fallback gets http1Limits, and each session is watched.
 */
export function enforceHttp2Limits(
  server: Http2SecureServer,
  limits: TransportLimits,
  stalled: (stream: ServerHttp2Stream) => void,
): void {
  Object.assign(server as unknown as Server, http1Limits(limits))
  server.on('session', (session) => watchSession(session, limits, stalled))
}

/**
 * A session with no open stream closes after the request timeout (before its first) or the
 * keep-alive timeout; a stream whose request is late goes to `stalled` (is reset if answered).
 */
function watchSession(
  session: ServerHttp2Session,
  limits: TransportLimits,
  stalled: (stream: ServerHttp2Stream) => void,
): void {
  let open = 0
  // Frames do not reset it: a session trickling PINGs or a never-ending header block holds no
  // stream, and closes all the same.
  let idle = setTimeout(() => session.destroy(), limits.requestTimeoutMs)
  session.once('close', () => clearTimeout(idle))
  session.on('stream', (stream: ServerHttp2Stream) => {
    open++
    clearTimeout(idle)
    const deadline = stream.endAfterHeaders
      ? undefined
      : setTimeout(() => {
          if (stream.closed || stream.state.remoteClose === 1) return
          if (stream.headersSent) stream.close(h2.NGHTTP2_CANCEL)
          else stalled(stream)
        }, limits.requestTimeoutMs)
    stream.once('close', () => {
      clearTimeout(deadline)
      if (--open === 0 && !session.destroyed) {
        idle = setTimeout(() => session.destroy(), limits.keepAliveTimeoutMs)
      }
    })
  })
}

/**
 * The request bodies the routes read over HTTP/2. A stream whose request is late fails its body
 * with a 408 error as the routes read it, so the error handler answers it (logged and counted as
 * any answer), and its session gets a GOAWAY, as HTTP/1.1 closes the connection.
 */
export class Http2Bodies {
  private readonly bodies = new WeakMap<ServerHttp2Stream, PassThrough>()
  private readonly late = new WeakSet<ServerHttp2Stream>()

  /** The body the routes read in place of the request's own (which it is, if it has none). */
  watch(req: Http2ServerRequest): Readable {
    if (req.stream.endAfterHeaders) return req
    const body = new PassThrough()
    if (this.late.has(req.stream)) {
      body.destroy(requestTimedOut())
      return body
    }
    this.bodies.set(req.stream, body)
    return req.pipe(body)
  }

  /** The stream's request has not arrived in full within the request timeout. */
  stalled(stream: ServerHttp2Stream): void {
    this.late.add(stream)
    // Once answered, the rest of the body is refused (RST_STREAM NO_ERROR, RFC 9113 §8.1).
    stream.once('finish', () => stream.close(h2.NGHTTP2_NO_ERROR))
    this.bodies.get(stream)?.destroy(requestTimedOut())
    stream.session?.close()
  }
}
