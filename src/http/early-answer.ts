// An answer given before the request's body has all arrived (401, 413, 415...) must still reach a
// client that writes its whole body first. Closing with body bytes unread makes the kernel reset
// the connection, losing the answer: so before such a close the rest is read, within bounds.
import type { IncomingMessage } from 'node:http'

/** Past this many discarded bytes the answer goes and the connection closes, read or not. */
export const DISCARD_MAX_BYTES = 8 * 1024 * 1024

/** Whether HTTP/1 closes the connection after answering `req` (RFC 9112 9.3). */
function closesAfterAnswer(req: IncomingMessage, responseConnection: unknown): boolean {
  if (typeof responseConnection === 'string' && /\bclose\b/i.test(responseConnection)) return true
  const connection = req.headers.connection ?? ''
  return req.httpVersion === '1.0'
    ? !/\bkeep-alive\b/i.test(connection)
    : /\bclose\b/i.test(connection)
}

/**
 * Resolves once what is left of `req`'s body has been read and discarded, DISCARD_MAX_BYTES have
 * been, or the request ended otherwise (closed, or cut by the request timeout). At once for a
 * request that is whole, is HTTP/2 (a stream ends on its own), or keeps its connection.
 */
export function restOfBodyDiscarded(
  req: IncomingMessage,
  responseConnection: unknown,
): Promise<void> | undefined {
  if (req.complete || req.httpVersionMajor !== 1 || !closesAfterAnswer(req, responseConnection)) {
    return undefined
  }
  return new Promise((resolve) => {
    let discarded = 0
    const done = () => {
      req.off('data', count)
      req.off('end', done)
      req.off('close', done)
      resolve()
    }
    const count = (chunk: Buffer) => {
      discarded += chunk.length
      if (discarded > DISCARD_MAX_BYTES) done()
    }
    req.on('data', count)
    req.once('end', done)
    req.once('close', done)
    req.resume()
  })
}
