// The `cursor` of a next-page link: opaque to clients, a keyset position to the service.
import { ApiError } from '../errors.js'

const INT64_MAX = 2n ** 63n - 1n
/** Longer than any cursor the service makes (28 characters), so none is refused by length. */
export const MAX_CURSOR_LENGTH = 64
export const CURSOR_MALFORMED = 'is malformed: use the Link of the previous page'
/** The base64url alphabet the service's cursors are written in. */
export const CURSOR_PATTERN = '^[A-Za-z0-9_-]+$'

export function encodeCursor(lastId: bigint): string {
  return Buffer.from(`v1:${lastId}`).toString('base64url')
}

/** The id after which the next page starts; a cursor the service did not make (that does not
 * encode back to itself, as base64url decoding skips other characters) is 400. */
export function decodeCursor(cursor: string): bigint {
  const m = /^v1:(0|[1-9][0-9]{0,18})$/.exec(Buffer.from(cursor, 'base64url').toString('utf8'))
  if (!m || BigInt(m[1]!) > INT64_MAX || encodeCursor(BigInt(m[1]!)) !== cursor) {
    throw new ApiError('invalid_request', `query parameter 'cursor' ${CURSOR_MALFORMED}`)
  }
  return BigInt(m[1]!)
}
