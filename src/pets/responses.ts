// The response entries of the route schemas, as the OpenAPI document shows them: a body schema
// with its description, headers and named examples, and what every operation's responses share.
import type { TSchema } from '@sinclair/typebox'
import { codeForStatus, errorBody } from '../errors.js'
import { CLIENT_ERROR_MESSAGES } from '../http/error-handling.js'
import { REQUEST_ID_PATTERN } from '../http/request-id.js'
import { getPetSunset, SUCCESSOR_LINK } from './deprecation.js'
import { ErrorSchema } from './schemas.js'

/** A response header as @fastify/swagger takes it: its schema and description. `x-required` (sent
 * on every such response) and `x-example` become its own `required` and `example` (openapi.ts). */
export type HeaderDoc = Record<string, unknown> & { description: string }

const sometimes = (description: string, schema: object, example?: unknown): HeaderDoc => ({
  ...schema,
  description,
  ...(example !== undefined && { 'x-example': example }),
})
const always = (description: string, schema: object, example?: unknown): HeaderDoc => ({
  ...sometimes(description, schema, example),
  'x-required': true,
})
/** A header sent on every such response, always with `value`. */
const fixed = (description: string, value: string) =>
  always(description, { type: 'string', const: value })

/** A number of seconds as the `Retry-After` field writes it. */
const seconds = { type: 'integer', format: 'int32', minimum: 1, maximum: 2147483647 }
const RATE_LIMIT_POLICY = '"(default|auth-failures)"'
const BEARER = 'Bearer realm="petstore"'

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
  deprecation: {
    Deprecation: always(
      'RFC 9745: `@<epoch-seconds>` of the moment the operation was deprecated.',
      { type: 'string', maxLength: 21, pattern: '^@-?[0-9]+$' },
      '@1764892800',
    ),
    Sunset: fixed(`RFC 8594: when the operation is removed.`, getPetSunset.httpDate),
    Link: fixed('The operation to use instead.', SUCCESSOR_LINK),
  },
}

/** Headers any response of the API may carry. */
const everyResponse: Record<string, HeaderDoc> = {
  'X-Request-Id': always(
    "The request's id: the client's own `X-Request-Id` when it is 1 to 128 of `A-Z a-z 0-9 . _ : @ -`, else one the service made. Logged with the request.",
    { type: 'string', maxLength: 128, pattern: REQUEST_ID_PATTERN.source },
    '2f1c6a0e-8b4d-4c57-9e3a-7d5b1f0c2a9e',
  ),
  'Cache-Control': fixed('Answers are never stored by caches.', 'no-store'),
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

/** A body schema with its description, headers and named examples (which @fastify/swagger moves
 * to the response's media type, so each response shows its own). */
export function withHeaders<T extends TSchema>(
  schema: T,
  description: string,
  responseHeaders: Record<string, HeaderDoc>,
  examples?: Record<string, { summary: string; value: unknown }>,
): T {
  return {
    ...schema,
    description,
    headers: responseHeaders,
    ...(examples && { 'x-examples': examples }),
  }
}

/** An Error response of `status`, with a named example for each case: its summary, and the
 * message (and status) of its body. */
export function errorResponse(
  status: number,
  description: string,
  cases: Record<string, [summary: string, message: string, status?: number]>,
  extra: Record<string, HeaderDoc> = {},
) {
  const examples = Object.entries(cases).map(([name, [summary, message, s = status]]) => [
    name,
    { summary, value: errorBody(codeForStatus(s), message, s) },
  ])
  return withHeaders(ErrorSchema, description, extra, Object.fromEntries(examples))
}

type Responses = Record<string, TSchema & { headers?: Record<string, HeaderDoc> }>

/** The errors any operation may answer, but 405 and the parser's (`default`, below). */
const anyOperation: Responses = {
  401: errorResponse(
    401,
    'API key missing or invalid.',
    {
      missingKey: ['No API key sent', 'an API key is required: send Authorization: Bearer <key>'],
      invalidKey: [
        'Unknown, revoked or expired key',
        'the API key is not valid (unknown, revoked or expired)',
      ],
    },
    {
      'WWW-Authenticate': always(
        '`Bearer realm="petstore"`, with `error="invalid_token"` when a key was sent but is not valid.',
        { type: 'string', enum: [BEARER, `${BEARER}, error="invalid_token"`] },
      ),
    },
  ),
  429: errorResponse(
    429,
    'Rate limit exceeded.',
    {
      keyBudget: [
        'This API key used its budget of the window',
        'rate limit of this API key exceeded',
      ],
      failedAuthentications: [
        'Too many failed authentications from this network',
        'too many failed authentication attempts from this address',
      ],
    },
    headers.retryAfter,
  ),
  500: errorResponse(500, 'An unexpected fault; the message never carries its details.', {
    internalError: ['An unexpected fault', 'internal server error'],
  }),
  503: errorResponse(
    503,
    'The database cannot be reached or is overloaded; retry after `Retry-After` seconds.',
    {
      unavailable: ['The database cannot be reached', 'the database is not reachable; retry later'],
    },
    headers.retryAfter,
  ),
}

/**
 * An operation's responses: its own, the errors of any operation, and `default` (405 on a path that
 * takes only `allow`, the parser's errors); each with `shared` and the headers of every response.
 */
export function operationResponses(
  own: Responses,
  allow: string,
  shared: Record<string, HeaderDoc> = {},
): Responses {
  const other = errorResponse(
    405,
    'Any other error, e.g. 405 with `Allow` for a method the path does not take, 408, 414 or 431.',
    {
      methodNotAllowed: [
        '405: a method the path does not take',
        `DELETE is not allowed here; use ${allow}`,
      ],
      requestTimeout: ['408: the request did not arrive in time', CLIENT_ERROR_MESSAGES[408]!, 408],
      uriTooLong: ['414: the request URI is too long', CLIENT_ERROR_MESSAGES[414]!, 414],
      headersTooLarge: ['431: the request headers are too large', CLIENT_ERROR_MESSAGES[431]!, 431],
    },
    {
      Allow: sometimes(
        'On 405: the methods the path takes.',
        { type: 'string', maxLength: 64, pattern: '^[A-Z]+(, [A-Z]+)*$' },
        allow,
      ),
    },
  )
  return Object.fromEntries(
    Object.entries({ ...own, ...anyOperation, default: other }).map(([status, response]) => [
      status,
      { ...response, headers: { ...response.headers, ...shared, ...everyResponse } },
    ]),
  )
}
