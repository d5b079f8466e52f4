// Answers decided before the request's body is in (401, 413, 415, 429...) go at once. A client that
// asked for `100 Continue` gets such an answer instead of the 100, which Node would send as soon as
// it has the head. A client that writes its whole body first must still read its answer: closing
// with body bytes unread makes the kernel reset the connection, so such a close waits for the rest.
import type { EventEmitter } from 'node:events'
import type { IncomingMessage, ServerResponse } from 'node:http'
import { type Http2ServerRequest, type Http2ServerResponse, constants as h2 } from 'node:http2'
import type { Readable } from 'node:stream'

/** Past this many discarded bytes the connection closes, read or not. */
export const DISCARD_MAX_BYTES = 8 * 1024 * 1024

type Request = IncomingMessage | Http2ServerRequest
type Response = ServerResponse | Http2ServerResponse

/** Requests whose client waits for a `100 Continue` not sent yet. */
const continueHeld = new WeakSet<Request>()

/**
 * Makes `server` (HTTP/1, or HTTP/2 with its HTTP/1.1 fallback) hold back each `100 Continue`
 * and hand the request on as any other: what is decided before its body is read answers instead.
 */
export function holdContinue(server: EventEmitter): void {
  server.on('checkContinue', (req: Request, res: Response) => {
    continueHeld.add(req)
    server.emit('request', req, res)
  })
}

/**
 * Sends `req`'s held `100 Continue` once `body`, the stream its body is read from, is read: even
 * when the client sent it without waiting, as Node keeps a connection open only after a 100.
 */
export function continueWhenRead(req: Request, res: Response, body: Readable): void {
  if (!continueHeld.has(req)) return
  body.once('resume', () => {
    if (continueHeld.delete(req) && !res.headersSent) res.writeContinue()
  })
}

/**
 * For an answer about to be written on `res`: no `100 Continue` after it, and the rest of a body
 * not all in is discarded (on HTTP/1, a close after the answer waits for it, `lingerMs` at most).
 */
export function answering(req: Request, res: Response, lingerMs: number): void {
  if (req.complete) return
  const held = continueHeld.delete(req)
  if (req.httpVersionMajor === 2) {
    const h2req = req as Http2ServerRequest
    if (!h2req.stream.endAfterHeaders) discardOnStream(h2req, held)
    return
  }
  if (req.destroyed) return
  // Node closes a connection whose client waited for a 100 that never came: it may send its body
  // all the same, or never. The answer says so.
  if (held) (res as ServerResponse).setHeader('connection', 'close')
  lingerBeforeClose(req as IncomingMessage, lingerMs)
}

/** A 'data' listener that calls `over` once more than DISCARD_MAX_BYTES have come. */
function discardUpTo(over: () => void): (chunk: Buffer) => void {
  let discarded = 0
  return (chunk) => {
    discarded += chunk.length
    if (discarded > DISCARD_MAX_BYTES) over()
  }
}

/**
 * Discarded, not reset: Node's own HTTP/2 client never closes a stream reset while it still has
 * body to send. A client waiting for its 100, or a body past DISCARD_MAX_BYTES, gets
 * RST_STREAM(NO_ERROR) after the answer (RFC 9113 §8.1). A stalled body meets the request timeout.
 */
function discardOnStream(req: Http2ServerRequest, held: boolean): void {
  const { stream } = req
  const reset = () => {
    if (!stream.closed && stream.state.remoteClose !== 1) stream.close(h2.NGHTTP2_NO_ERROR)
  }
  const stop = () => {
    req.off('data', count)
    if (stream.writableFinished) reset()
    else stream.once('finish', reset)
  }
  const count = discardUpTo(stop)
  if (held || Number(req.headers['content-length']) > DISCARD_MAX_BYTES) {
    stop()
    return
  }
  req.unpipe()
  req.on('data', count)
  req.resume()
}

/**
 * Node closes a connection after its last answer with destroySoon, which waits here until the
 * body has ended, been cut, passed DISCARD_MAX_BYTES or `lingerMs` passed (Node's own request
 * timeout check stops once the listener closes). An open connection's body is read to the end.
 */
function lingerBeforeClose(req: IncomingMessage, lingerMs: number): void {
  const socket = req.socket
  let closeAsked = false
  const over = () => {
    clearTimeout(timer)
    req.off('data', count)
    req.off('end', over)
    req.off('close', over)
    Reflect.deleteProperty(socket, 'destroySoon')
    if (closeAsked) socket.destroySoon()
  }
  const count = discardUpTo(over)
  const timer = setTimeout(over, lingerMs).unref()
  req.on('data', count)
  req.once('end', over)
  req.once('close', over)
  req.resume()
  socket.destroySoon = () => {
    closeAsked = true
  }
}
