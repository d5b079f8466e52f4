// The `Link: <...>; rel="next"` of a list page, the same from the Fastify route and the hot path.
import { isAuthority } from '../http/authority.js'

/**
 * `protocol` and `host` are the request's (src/http/forwarded.ts); a request that names no host
 * (HTTP/1.0 without Host) is given `fallbackOrigin`. An invalid Host never gets here (edge.ts
 * answers it 400); the check keeps a Link from ever carrying one. Every part of the query is
 * URL-safe as it stands (an integer, a status name, a base64url cursor), so it is joined as a
 * string rather than through URLSearchParams.
 */
export function nextPageLink(
  protocol: string,
  host: string,
  fallbackOrigin: string,
  query: { limit: number; status?: string | undefined },
  nextCursor: string,
): string {
  const origin = isAuthority(host) ? `${protocol}://${host}` : fallbackOrigin
  const status = query.status ? `&status=${query.status}` : ''
  return `<${origin}/v1/pets?limit=${query.limit}${status}&cursor=${nextCursor}>; rel="next"`
}
