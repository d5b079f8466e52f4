// The limits Node's HTTP/2 server leaves out: idle and late sessions and streams, the send
// deadline of each stream, and request bodies still arriving past the request timeout.
import type { Server } from 'node:http'
import {
  type Http2SecureServer,
  type Http2ServerRequest,
  constants as h2,
  type ServerHttp2Session,
  type ServerHttp2Stream,
} from 'node:http2'
import type { Socket } from 'node:net'
import { PassThrough, type Readable } from 'node:stream'
import type { TLSSocket } from 'node:tls'
import { requestTimedOut } from './error-handling.js'
import type { SendDeadline, Sender } from './send-deadline.js'
import { http1Limits, type TransportLimits } from './transport-limits.js'

/**
 * Node's HTTP/2 server applies none of its HTTP/1 limits to its sessions, and laxer defaults to
 * its HTTP/1.1 fallback: the fallback gets http1Limits, and each session is watched.
 */
export function enforceHttp2Limits(
  server: Http2SecureServer,
  limits: TransportLimits,
  stalled: (stream: ServerHttp2Stream) => void,
  deadline: SendDeadline,
): void {
  Object.assign(server as unknown as Server, http1Limits(limits))
  // A session hides its socket, and destroying a session whose peer reads nothing leaves the
  // socket open (it waits for its last write): the socket is found by its addresses.
  const sockets = new Map<string, TLSSocket>()
  server.on('secureConnection', (socket: TLSSocket) => {
    const key = addressesOf(socket)
    sockets.set(key, socket)
    socket.once('close', () => sockets.delete(key))
  })
  server.on('session', (session) => {
    const key = addressesOf(session.socket)
    watchSession(session, limits, stalled, deadline, () => {
      session.destroy()
      sockets.get(key)?.destroy()
    })
  })
}

const addressesOf = (socket: Socket) =>
  `${socket.localAddress} ${socket.localPort} ${socket.remoteAddress} ${socket.remotePort}`

/**
 * A session with no open stream closes after the request timeout (before its first) or the
 * keep-alive timeout; a stream whose request is late goes to `stalled` (is reset if answered); a
 * stream whose answer the client takes nothing of for the request timeout is reset, or, when
 * nothing of the whole session was taken in that time, the session ends (`end`).
 */
function watchSession(
  session: ServerHttp2Session,
  limits: TransportLimits,
  stalled: (stream: ServerHttp2Stream) => void,
  deadline: SendDeadline,
  end: () => void,
): void {
  let open = 0
  // Frames do not reset it: PINGs or a never-ending header block hold no stream.
  const closeAfter = (ms: number) => setTimeout(() => session.destroy(), ms)
  let idle = closeAfter(limits.requestTimeoutMs)
  session.once('close', () => clearTimeout(idle))
  const progress = { at: performance.now() }
  session.on('stream', (stream: ServerHttp2Stream) => {
    open++
    clearTimeout(idle)
    const deadlineOfRequest = stream.endAfterHeaders
      ? undefined
      : setTimeout(() => {
          if (stream.closed || stream.state.remoteClose === 1) return
          if (stream.headersSent) stream.close(h2.NGHTTP2_CANCEL)
          else stalled(stream)
        }, limits.requestTimeoutMs)
    const sender = streamSender(stream, progress, end)
    deadline.watch(sender)
    stream.once('close', () => {
      deadline.unwatch(sender)
      clearTimeout(deadlineOfRequest)
      if (--open === 0 && !session.destroyed) idle = closeAfter(limits.keepAliveTimeoutMs)
    })
  })
}

/**
 * A stream's answer as the send deadline sees it: each write completes ('drain', the last
 * 'finish') as the client's flow-control window lets it go. `session.at`: when the client last
 * took something of any stream of the session.
 */
function streamSender(stream: ServerHttp2Stream, session: { at: number }, end: () => void): Sender {
  let completed = 0
  const moved = () => {
    completed++
    session.at = performance.now()
  }
  stream.on('drain', moved)
  stream.once('finish', moved)
  return {
    // Or written in full, the request in full, and its END_STREAM not gone out.
    unsent: () =>
      stream.writableLength > 0 || (stream.writableFinished && stream.state.remoteClose === 1),
    taken: () => completed,
    cut: (since) => (session.at <= since ? end() : stream.close(h2.NGHTTP2_CANCEL)),
  }
}

/**
 * The request bodies the routes read over HTTP/2. A late request's body fails with a 408 error,
 * which the error handler answers as any other, and its session gets a GOAWAY.
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
