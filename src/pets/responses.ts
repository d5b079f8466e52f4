// Response entries of the route schemas: a body schema with the description and headers that
// the OpenAPI document shows for it.
import type { TSchema } from '@sinclair/typebox'
import { getPetSunset } from './deprecation.js'
import { ErrorSchema } from './schemas.js'

interface HeaderDoc {
  type: 'string' | 'integer'
  description: string
}

const h = (description: string, type: 'string' | 'integer' = 'string'): HeaderDoc => ({
  type,
  description,
})

export const headers = {
  link: h('`<url>; rel="next"` when another page exists (RFC 8288); absent on the last page.'),
  location: h('Path of the new animal, `/v1/pets/{id}`.'),
  replayed: h(
    '`true` when this is the stored response to an earlier request with the same Idempotency-Key.',
  ),
  retryAfter: { 'Retry-After': h('Seconds to wait before retrying.', 'integer') },
  challenge: {
    'WWW-Authenticate': h(
      '`Bearer realm="petstore"`, with `error="invalid_token"` when a key was sent but is not valid.',
    ),
  },
  rateLimit: {
    'RateLimit-Policy': h(
      'The rate-limit policy, e.g. `"default";q=6000;w=60` (draft-ietf-httpapi-ratelimit-headers).',
    ),
    RateLimit: h('What is left of the policy, e.g. `"default";r=5999;t=60`.'),
  },
  deprecation: {
    Deprecation: h('RFC 9745: `@<epoch-seconds>` of the moment the operation was deprecated.'),
    Sunset: h(`RFC 8594: \`${getPetSunset.httpDate}\`, when the operation is removed.`),
    Link: h('`</v1/pets>; rel="successor-version"`: the operation to use instead.'),
  },
} as const

export function withHeaders<T extends TSchema>(
  schema: T,
  description: string,
  responseHeaders: Record<string, HeaderDoc>,
): T {
  return { ...schema, description, headers: responseHeaders }
}

/** An Error response; like every /v1 response it carries the rate-limit fields. */
export function errorResponse(description: string, extra: Record<string, HeaderDoc> = {}) {
  return withHeaders(ErrorSchema, description, { ...extra, ...headers.rateLimit })
}
