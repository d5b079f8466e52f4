// The `Link: <...>; rel="next"` of a list page.

/**
 * `protocol` and `host` are the request's (src/http/forwarded.ts); a request that names no host
 * (HTTP/1.0 without Host) is given `fallbackOrigin`. The host is valid: edge.ts answers an
 * invalid Host 400, and forwarded.ts takes only a valid X-Forwarded-Host. Every part of the query is
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
  const origin = host === '' ? fallbackOrigin : `${protocol}://${host}`
  const status = query.status ? `&status=${query.status}` : ''
  return `<${origin}/v1/pets?limit=${query.limit}${status}&cursor=${nextCursor}>; rel="next"`
}
