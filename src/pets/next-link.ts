// The `Link: <...>; rel="next"` of a list page.

/**
 * `protocol` and `host` are the request's, already validated (edge.ts, forwarded.ts); a request
 * naming no host gets `fallbackOrigin`. Every query part is URL-safe as it stands.
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
