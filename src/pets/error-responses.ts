// The Error responses of the route schemas, each case with its named example, and an operation's
// responses: every one goes through `operationResponses`, so the headers and errors that any
// response may carry are declared on each.
import type { TSchema } from '@sinclair/typebox'
import { type ErrorCode, errorBody } from '../errors.js'
import { CLIENT_ERROR_MESSAGES } from '../http/error-handling.js'
import { everyResponse, type HeaderDoc, headers, sometimes, withHeaders } from './responses.js'
import { ErrorSchema } from './schemas.js'

/** One case of an Error response: the body the service answers then. */
export interface ErrorCase {
  summary: string
  code: ErrorCode
  message: string
  /** Only where the HTTP parser answers a status no code stands for (408, 414, 431). */
  status?: number
}

/** An Error response, with a named example for each of its cases. */
export function errorResponse(
  description: string,
  cases: Record<string, ErrorCase>,
  extra: Record<string, HeaderDoc> = {},
) {
  const examples = Object.fromEntries(
    Object.entries(cases).map(([name, c]) => [
      name,
      { summary: c.summary, value: errorBody(c.code, c.message, c.status) },
    ]),
  )
  return withHeaders(ErrorSchema, description, extra, examples)
}

/** The 401 of every operation: no key, or a key that is not valid. */
export const unauthorized = errorResponse(
  'API key missing or invalid.',
  {
    missingKey: {
      summary: 'No API key sent',
      code: 'unauthorized',
      message: 'an API key is required: send Authorization: Bearer <key>',
    },
    invalidKey: {
      summary: 'Unknown, revoked or expired key',
      code: 'unauthorized',
      message: 'the API key is not valid (unknown, revoked or expired)',
    },
  },
  headers.challenge,
)

/** The 429 of every operation: a key past its budget, or a network past its failed attempts. */
export const rateLimited = errorResponse(
  'Rate limit exceeded.',
  {
    keyBudget: {
      summary: 'This API key used its budget of the window',
      code: 'rate_limited',
      message: 'rate limit of this API key exceeded',
    },
    failedAuthentications: {
      summary: 'Too many failed authentications from this network',
      code: 'rate_limited',
      message: 'too many failed authentication attempts from this address',
    },
  },
  headers.retryAfter,
)

type Responses = Record<string, TSchema & { headers?: Record<string, HeaderDoc> }>

/** What every operation shares: headers of a deprecated one, and the methods its path takes. */
export interface SharedResponses {
  headers?: Record<string, HeaderDoc>
  /** The `Allow` of the operation's path, as a 405 there says it. */
  allow: string
}

/** The `default` response: 405 on the path (its example first), and the parser's errors. */
function otherErrors(allow: string) {
  return errorResponse(
    'Any other error, e.g. 405 with `Allow` for a method the path does not take, 408, 414 or 431.',
    {
      methodNotAllowed: {
        summary: '405: a method the path does not take',
        code: 'method_not_allowed',
        message: `DELETE is not allowed here; use ${allow}`,
      },
      requestTimeout: {
        summary: '408: the request did not arrive in time',
        code: 'invalid_request',
        message: CLIENT_ERROR_MESSAGES[408]!,
        status: 408,
      },
      uriTooLong: {
        summary: '414: the request URI is too long',
        code: 'invalid_request',
        message: CLIENT_ERROR_MESSAGES[414]!,
        status: 414,
      },
      headersTooLarge: {
        summary: '431: the request headers are too large',
        code: 'invalid_request',
        message: CLIENT_ERROR_MESSAGES[431]!,
        status: 431,
      },
    },
    {
      Allow: sometimes(
        'On 405: the methods the path takes.',
        { type: 'string', maxLength: 64, pattern: '^[A-Z]+(, [A-Z]+)*$' },
        allow,
      ),
    },
  )
}

/**
 * An operation's responses: its own, the errors any operation may answer, and on each the
 * headers of every response plus `shared.headers` (e.g. the deprecation fields of a deprecated one).
 */
export function operationResponses(own: Responses, shared: SharedResponses): Responses {
  const all: Responses = {
    ...own,
    500: errorResponse('An unexpected fault; the message never carries its details.', {
      internalError: {
        summary: 'An unexpected fault',
        code: 'internal_error',
        message: 'internal server error',
      },
    }),
    503: errorResponse(
      'The database cannot be reached or is overloaded; retry after `Retry-After` seconds.',
      {
        unavailable: {
          summary: 'The database cannot be reached',
          code: 'service_unavailable',
          message: 'the database is not reachable; retry later',
        },
      },
      headers.retryAfter,
    ),
    default: otherErrors(shared.allow),
  }
  return Object.fromEntries(
    Object.entries(all).map(([status, response]) => [
      status,
      { ...response, headers: { ...response.headers, ...shared.headers, ...everyResponse } },
    ]),
  )
}
