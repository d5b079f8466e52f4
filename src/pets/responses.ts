// Response entries of the route schemas: a body schema with the description, headers and named
// examples that the OpenAPI document shows for it; the headers responses carry.
import type { TSchema } from '@sinclair/typebox'
import { REQUEST_ID_PATTERN } from '../http/request-id.js'
import { getPetSunset, SUCCESSOR_LINK } from './deprecation.js'

/**
 * A response header as @fastify/swagger takes it: the header's schema plus its description.
 * `x-required` marks a header sent on every such response; the document writes it as the
 * header's `required` (src/http/openapi.ts).
 */
export type HeaderDoc = Record<string, unknown> & { description: string }

/** `example` becomes the header's own example in the document, which mocks send. */
const always = (description: string, schema: object, example?: unknown): HeaderDoc => ({
  ...sometimes(description, schema, example),
  'x-required': true,
})
export const sometimes = (description: string, schema: object, example?: unknown): HeaderDoc => ({
  ...schema,
  description,
  ...(example !== undefined && { 'x-example': example }),
})

/** A number of seconds as the `Retry-After` field writes it. */
const seconds = { type: 'integer', format: 'int32', minimum: 1, maximum: 2147483647 }
const RATE_LIMIT_POLICY = '"(default|auth-failures)"'

export const headers = {
  link: sometimes(
    '`<url>; rel="next"` when another page exists (RFC 8288); absent on the last page.',
    { type: 'string', maxLength: 2048, pattern: '^<[^<>]+>; rel="next"$' },
    '<https://petstore.example.com/v1/pets?limit=20&cursor=djE6MjA>; rel="next"',
  ),
  location: always(
    'Path of the new animal, `/v1/pets/{id}`.',
    { type: 'string', maxLength: 28, pattern: '^/v1/pets/[1-9][0-9]*$' },
    '/v1/pets/1',
  ),
  replayed: sometimes(
    '`true` when this is the stored response to an earlier request with the same Idempotency-Key; absent otherwise.',
    { type: 'string', const: 'true' },
  ),
  retryAfter: { 'Retry-After': always('Seconds to wait before retrying.', seconds, 1) },
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
      '@1764892800',
    ),
    Sunset: always(`RFC 8594: when the operation is removed.`, {
      type: 'string',
      const: getPetSunset.httpDate,
    }),
    Link: always('The operation to use instead.', { type: 'string', const: SUCCESSOR_LINK }),
  },
} as const

/** Headers any response of the API may carry. */
export const everyResponse: Record<string, HeaderDoc> = {
  'X-Request-Id': always(
    "The request's id: the client's own `X-Request-Id` when it is 1 to 128 of `A-Z a-z 0-9 . _ : @ -`, else one the service made. Logged with the request.",
    { type: 'string', maxLength: 128, pattern: REQUEST_ID_PATTERN.source },
    '2f1c6a0e-8b4d-4c57-9e3a-7d5b1f0c2a9e',
  ),
  'Cache-Control': always('Answers are never stored by caches.', {
    type: 'string',
    const: 'no-store',
  }),
  'RateLimit-Policy': sometimes(
    'The rate-limit policy that counted the request, e.g. `"default";q=6000;w=60` (draft-ietf-httpapi-ratelimit-headers); `auth-failures` counts failed authentications.',
    { type: 'string', maxLength: 64, pattern: `^${RATE_LIMIT_POLICY};q=[0-9]+;w=[0-9]+$` },
    '"default";q=6000;w=60',
  ),
  RateLimit: sometimes(
    'What is left of the policy, e.g. `"default";r=5999;t=60`; absent when the counters cannot be read.',
    { type: 'string', maxLength: 64, pattern: `^${RATE_LIMIT_POLICY};r=[0-9]+;t=[0-9]+$` },
    '"default";r=5999;t=60',
  ),
  'Access-Control-Allow-Origin': sometimes(
    "The request's `Origin`, when it is one of the browser origins the operator allows (CORS is off unless configured).",
    { type: 'string', maxLength: 2048, format: 'uri' },
    'https://app.example.com',
  ),
}

/** Named examples of a response, as the document's media type writes them. */
export type NamedExamples = Record<string, { summary: string; value: unknown }>

/**
 * A body schema with its description, headers and named examples. @fastify/swagger moves
 * `x-examples` to the response's media type, so each response shows its own examples.
 */
export function withHeaders<T extends TSchema>(
  schema: T,
  description: string,
  responseHeaders: Record<string, HeaderDoc>,
  examples?: NamedExamples,
): T {
  return {
    ...schema,
    description,
    headers: responseHeaders,
    ...(examples && { 'x-examples': examples }),
  }
}
