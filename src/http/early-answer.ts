// Answers decided before the request's body is in (401, 413, 415, 429...) go at once. A client that
// asked for `100 Continue` gets such an answer instead of the 100: Node would send the 100 as soon
// as it has the head, before anything is decided. And a client that writes its whole body first
// must still read its answer: closing with body bytes unread makes the kernel reset the connection,
// losing the answer, so a close after such an answer waits until the rest is read, within bounds.
import type { EventEmitter } from 'node:events'
import type { IncomingMessage, ServerResponse } from 'node:http'
import { type Http2ServerRequest, type Http2ServerResponse, constants as h2 } from 'node:http2'
import type { Readable } from 'node:stream'

/** Past this many discarded bytes the connection closes, read or not. */
export const DISCARD_MAX_BYTES = 8 * 1024 * 1024

type Request = IncomingMessage | Http2ServerRequest
type Response = ServerResponse | Http2ServerResponse

/** Marks a request whose client waits for a `100 Continue` not sent yet. */
const CONTINUE_HELD = Symbol('petstore.continueHeld')

type Marked = Request & { [CONTINUE_HELD]?: boolean }

/** Whether `req`'s 100 was held back and not sent; it is no longer held after this. */
function takeHeld(req: Request): boolean {
  const held = (req as Marked)[CONTINUE_HELD] === true
  if (held) (req as Marked)[CONTINUE_HELD] = false
  return held
}

/**
 * Makes `server` (HTTP/1, or HTTP/2 with its HTTP/1.1 fallback: the same event) hold back each
 * `100 Continue` and hand the request on as any other; the 100 goes once the body is read
 * (continueWhenRead), so everything decided before that answers in its place.
 */
export function holdContinue(server: EventEmitter): void {
  server.on('checkContinue', (req: Request, res: Response) => {
    ;(req as Marked)[CONTINUE_HELD] = true
    server.emit('request', req, res)
  })
}

/**
 * Sends `req`'s held `100 Continue` once `body`, the stream its body is read from, is read: even
 * when the client sent it without waiting, as Node keeps a connection open only after a 100.
 */
export function continueWhenRead(req: Request, res: Response, body: Readable): void {
  if ((req as Marked)[CONTINUE_HELD] !== true) return
  body.once('resume', () => {
    if (takeHeld(req) && !res.headersSent) res.writeContinue()
  })
}

/**
 * For an answer about to be written on `res`: no `100 Continue` after it. When the body is not all
 * in, its rest is read and discarded: on HTTP/2 (discardOnStream), and on an HTTP/1 connection
 * that closes after the answer, whose close waits for it, for `lingerMs` at most.
 */
export function answering(req: Request, res: Response, lingerMs: number): void {
  if (req.complete) return
  const continueHeld = takeHeld(req)
  if (req.httpVersionMajor === 2) {
    const h2req = req as Http2ServerRequest
    if (!h2req.stream.endAfterHeaders) discardOnStream(h2req, continueHeld)
    return
  }
  if (req.destroyed) return
  // Node closes a connection whose client waited for a 100 that never came: it may send its body
  // all the same, or never. The answer says so.
  if (continueHeld) (res as ServerResponse).setHeader('connection', 'close')
  lingerBeforeClose(req as IncomingMessage, lingerMs)
}

/**
 * HTTP/2: the rest of the body is read and discarded, so that a client that writes its whole body
 * first ends its stream as usual (Node's own client never closes a stream reset while it still has
 * body to send). A client still waiting for its 100, or a body past DISCARD_MAX_BYTES, is told to
 * stop: RST_STREAM(NO_ERROR) after the answer (RFC 9113 §8.1). A body that stalls meets the
 * request timeout (http2-limits.ts).
 */
function discardOnStream(req: Http2ServerRequest, continueHeld: boolean): void {
  const { stream } = req
  let discarded = 0
  const reset = () => {
    if (!stream.closed && stream.state.remoteClose !== 1) stream.close(h2.NGHTTP2_NO_ERROR)
  }
  const stop = () => {
    req.off('data', count)
    if (stream.writableFinished) reset()
    else stream.once('finish', reset)
  }
  const count = (chunk: Buffer) => {
    discarded += chunk.length
    if (discarded > DISCARD_MAX_BYTES) stop()
  }
  if (continueHeld || Number(req.headers['content-length']) > DISCARD_MAX_BYTES) {
    stop()
    return
  }
  req.unpipe()
  req.on('data', count)
  req.resume()
}

/**
 * Reads and discards the rest of `req`'s body. Node closes a connection after its last answer
 * with destroySoon: until the body has ended, been cut (the client gone, the request timed out),
 * passed DISCARD_MAX_BYTES or `lingerMs` passed, that close waits, the answer sent. Node's own
 * check of the request timeout stops once the listener closes: the timer bounds a drain too. A
 * connection that stays open is Node's as before, its body read to the end.
 */
function lingerBeforeClose(req: IncomingMessage, lingerMs: number): void {
  const socket = req.socket
  let discarded = 0
  let closeAsked = false
  const over = () => {
    clearTimeout(timer)
    req.off('data', count)
    req.off('end', over)
    req.off('close', over)
    Reflect.deleteProperty(socket, 'destroySoon')
    if (closeAsked) socket.destroySoon()
  }
  const count = (chunk: Buffer) => {
    discarded += chunk.length
    if (discarded > DISCARD_MAX_BYTES) over()
  }
  const timer = setTimeout(over, lingerMs).unref()
  req.on('data', count)
  req.once('end', over)
  req.once('close', over)
  req.resume()
  socket.destroySoon = () => {
    closeAsked = true
  }
}
