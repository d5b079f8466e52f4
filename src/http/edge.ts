// Rules of HTTP itself that a request must meet before anything reads it: Node's parser keeps the
// first of repeated headers and drops the rest, so repetition is judged on the raw header list.
import type { IncomingMessage } from 'node:http'
import type { TLSSocket } from 'node:tls'
import { ApiError } from '../errors.js'
import { isAuthority, parseAuthority, sameAuthority } from './authority.js'

const invalid = (message: string) => new ApiError('invalid_request', message)

/** The request's problem with the edge rules, or null when it has none. */
export function edgeViolation(req: IncomingMessage): ApiError | null {
  let hosts = 0
  let authorizations = 0
  const raw = req.rawHeaders
  for (let i = 0; i < raw.length; i += 2) {
    const name = raw[i]!
    if (name.length === 4 && name.toLowerCase() === 'host') hosts++
    else if (name.length === 13 && name.toLowerCase() === 'authorization') authorizations++
  }
  // RFC 9112 §3.2: an HTTP/1.1 request without Host, or with more than one, is answered 400.
  const needsHost = req.httpVersionMajor === 1 && req.httpVersionMinor >= 1
  if (hosts > 1 || (needsHost && hosts === 0)) {
    return invalid('the request must carry exactly one Host header')
  }
  const authority = authorityViolation(req)
  if (authority !== null) return authority
  // Which of two credentials would count is ambiguous; neither is taken.
  if (authorizations > 1) return invalid('the request must carry at most one Authorization header')
  return null
}

export const AUTHORITY_RULE =
  'must be a host name, an IPv4 address or a bracketed IPv6 address, with an optional port from 1 to 65535'

/**
 * RFC 9112 §3.2: a Host that is not a valid host[:port] is answered 400, as is an HTTP/2 request
 * whose Host names another authority than its :authority (RFC 9113 §8.3.1: it is malformed).
 */
function authorityViolation(req: IncomingMessage): ApiError | null {
  const host = req.headers.host
  if (host !== undefined && !isAuthority(host)) {
    return invalid(`the Host header ${AUTHORITY_RULE}`)
  }
  const pseudo = req.httpVersionMajor === 2 ? req.headers[':authority'] : undefined
  if (typeof pseudo !== 'string') return null
  const authority = parseAuthority(pseudo)
  if (authority === null) return invalid(`:authority ${AUTHORITY_RULE}`)
  const defaultPort = (req.socket as TLSSocket).encrypted ? 443 : 80
  if (host !== undefined && !sameAuthority(parseAuthority(host)!, authority, defaultPort)) {
    return invalid('the Host header and :authority must name the same host and port')
  }
  return null
}

/** A Content-Encoding the service cannot read (it decodes none), or null for an identity body. */
export function unsupportedContentEncoding(req: IncomingMessage): ApiError | null {
  const encoding = req.headers['content-encoding']
  if (encoding === undefined || encoding.trim().toLowerCase() === 'identity') return null
  return new ApiError(
    'unsupported_media_type',
    'Content-Encoding is not supported: send the request body uncompressed',
  )
}
