// Response entries of the route schemas: a body schema with the description and headers that
// the OpenAPI document shows for it. Every operation's responses go through `operationResponses`,
// so the headers and errors that any response may carry are declared on each one.
import type { TSchema } from '@sinclair/typebox'
import { REQUEST_ID_PATTERN } from '../http/request-id.js'
import { getPetSunset, SUCCESSOR_LINK } from './deprecation.js'
import { ErrorSchema } from './schemas.js'

/**
 * A response header as @fastify/swagger takes it: the header's schema plus its description.
 * `x-required` marks a header sent on every such response; the document writes it as the
 * header's `required` (src/http/openapi.ts).
 */
export type HeaderDoc = Record<string, unknown> & { description: string }

const always = (description: string, schema: object): HeaderDoc => ({
  ...schema,
  description,
  'x-required': true,
})
const sometimes = (description: string, schema: object): HeaderDoc => ({ ...schema, description })

/** A number of seconds as the `Retry-After` field writes it. */
const seconds = { type: 'integer', format: 'int32', minimum: 1, maximum: 2147483647 }
const RATE_LIMIT_POLICY = '"(default|auth-failures)"'

export const headers = {
  link: sometimes(
    '`<url>; rel="next"` when another page exists (RFC 8288); absent on the last page.',
    { type: 'string', maxLength: 2048, pattern: '^<[^<>]+>; rel="next"$' },
  ),
  location: always('Path of the new animal, `/v1/pets/{id}`.', {
    type: 'string',
    maxLength: 28,
    pattern: '^/v1/pets/[1-9][0-9]*$',
  }),
  replayed: sometimes(
    '`true` when this is the stored response to an earlier request with the same Idempotency-Key; absent otherwise.',
    { type: 'string', const: 'true' },
  ),
  retryAfter: { 'Retry-After': always('Seconds to wait before retrying.', seconds) },
  challenge: {
    'WWW-Authenticate': always(
      '`Bearer realm="petstore"`, with `error="invalid_token"` when a key was sent but is not valid.',
      {
        type: 'string',
        enum: ['Bearer realm="petstore"', 'Bearer realm="petstore", error="invalid_token"'],
      },
    ),
  },
  deprecation: {
    Deprecation: always(
      'RFC 9745: `@<epoch-seconds>` of the moment the operation was deprecated.',
      { type: 'string', maxLength: 21, pattern: '^@-?[0-9]+$' },
    ),
    Sunset: always(`RFC 8594: when the operation is removed.`, {
      type: 'string',
      const: getPetSunset.httpDate,
    }),
    Link: always('The operation to use instead.', { type: 'string', const: SUCCESSOR_LINK }),
  },
} as const

/** Headers any response of the API may carry. */
const everyResponse: Record<string, HeaderDoc> = {
  'X-Request-Id': always(
    "The request's id: the client's own `X-Request-Id` when it is 1 to 128 of `A-Z a-z 0-9 . _ : @ -`, else one the service made. Logged with the request.",
    { type: 'string', maxLength: 128, pattern: REQUEST_ID_PATTERN.source },
  ),
  'Cache-Control': always('Answers are never stored by caches.', {
    type: 'string',
    const: 'no-store',
  }),
  'RateLimit-Policy': sometimes(
    'The rate-limit policy that counted the request, e.g. `"default";q=6000;w=60` (draft-ietf-httpapi-ratelimit-headers); `auth-failures` counts failed authentications.',
    { type: 'string', maxLength: 64, pattern: `^${RATE_LIMIT_POLICY};q=[0-9]+;w=[0-9]+$` },
  ),
  RateLimit: sometimes(
    'What is left of the policy, e.g. `"default";r=5999;t=60`; absent when the counters cannot be read.',
    { type: 'string', maxLength: 64, pattern: `^${RATE_LIMIT_POLICY};r=[0-9]+;t=[0-9]+$` },
  ),
  'Access-Control-Allow-Origin': sometimes(
    "The request's `Origin`, when it is one of the browser origins the operator allows (CORS is off unless configured).",
    { type: 'string', maxLength: 2048, format: 'uri' },
  ),
}

export function withHeaders<T extends TSchema>(
  schema: T,
  description: string,
  responseHeaders: Record<string, HeaderDoc>,
): T {
  return { ...schema, description, headers: responseHeaders }
}

/** An Error response. */
export function errorResponse(description: string, extra: Record<string, HeaderDoc> = {}) {
  return withHeaders(ErrorSchema, description, extra)
}

type Responses = Record<string, TSchema & { headers?: Record<string, HeaderDoc> }>

/**
 * An operation's responses: its own, the errors any operation may answer, and on each the
 * headers of every response plus `shared` (e.g. the deprecation fields of a deprecated one).
 */
export function operationResponses(
  own: Responses,
  shared: Record<string, HeaderDoc> = {},
): Responses {
  const all: Responses = {
    ...own,
    500: errorResponse('An unexpected fault; the message never carries its details.'),
    503: errorResponse(
      'The database cannot be reached or is overloaded; retry after `Retry-After` seconds.',
      headers.retryAfter,
    ),
    default: errorResponse(
      'Any other error, e.g. 405 with `Allow` for a method the path does not take, 408, 414 or 431.',
      {
        Allow: sometimes('On 405: the methods the path takes.', {
          type: 'string',
          maxLength: 64,
          pattern: '^[A-Z]+(, [A-Z]+)*$',
        }),
      },
    ),
  }
  return Object.fromEntries(
    Object.entries(all).map(([status, response]) => [
      status,
      { ...response, headers: { ...response.headers, ...shared, ...everyResponse } },
    ]),
  )
}
