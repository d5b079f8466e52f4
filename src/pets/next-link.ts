// The `Link: <...>; rel="next"` of a list page, the same from the Fastify route and the hot path.

// A DNS name (at most 253 characters) or a bracketed IPv6 address, with an optional port.
const SAFE_HOST = /^[A-Za-z0-9.-]{1,253}(:\d{1,5})?$|^\[[0-9A-Fa-f:.]{2,45}\](:\d{1,5})?$/

/**
 * `host` is the request's Host; one that cannot be trusted to form a URL gives way to
 * `fallbackOrigin`. Every part of the query is URL-safe as it stands (an integer, a status name,
 * a base64url cursor), so it is joined as a string rather than through URLSearchParams.
 */
export function nextPageLink(
  protocol: string,
  host: string,
  fallbackOrigin: string,
  query: { limit: number; status?: string | undefined },
  nextCursor: string,
): string {
  const origin = SAFE_HOST.test(host) ? `${protocol}://${host}` : fallbackOrigin
  const status = query.status ? `&status=${query.status}` : ''
  return `<${origin}/v1/pets?limit=${query.limit}${status}&cursor=${nextCursor}>; rel="next"`
}
