// What a reply is made of on either path: an operation's outcome, the headers every response
// carries, and every error, from any layer or listener, as the one Error body with a code from the
// fixed set.
import { randomUUID } from 'node:crypto'
import type { FastifyBaseLogger, FastifyError } from 'fastify'
import { ApiError, codeForStatus, type ErrorBody, type ErrorCode, errorBody } from '../errors.js'
import { StorageUnavailableError } from '../storage/errors.js'
import { describeValidation, type ValidationIssue } from './validation-messages.js'

/** A response as decided: status, headers as a flat name, value, name, value… list, JSON text. */
export interface Outcome {
  status: number
  headers: string[]
  body: string
}

export const JSON_CONTENT_TYPE = 'application/json; charset=utf-8'

/** Where unexpected errors are reported: the request's logger. */
export type ErrorLog = Pick<FastifyBaseLogger, 'error' | 'warn'>

const FRAMEWORK_MESSAGES: Partial<Record<number, string>> = {
  413: 'request body is larger than 65536 bytes',
  415: 'request body must be application/json',
}

/** The Error body and extra headers of an error; `log` hears of the unexpected ones. */
export function toErrorBody(
  error: FastifyError | ApiError | Error,
  log: ErrorLog,
): { body: ErrorBody; headers: Record<string, string> } {
  if (error instanceof ApiError) return { body: error.toBody(), headers: error.headers }
  if (error instanceof StorageUnavailableError) {
    // A warning: the operator must see it, but it is the database's state, not a bug.
    log.warn({ err: error }, 'storage unavailable')
    return {
      body: errorBody('service_unavailable', error.message),
      headers: { 'retry-after': String(error.retryAfterSeconds) },
    }
  }
  const e = error as FastifyError
  if (e.validation && e.validation.length > 0) {
    const issue = e.validation[0] as ValidationIssue
    const context = e.validationContext ?? 'body'
    return { body: errorBody('invalid_request', describeValidation(context, issue)), headers: {} }
  }
  const status = e.statusCode ?? 500
  if (status >= 400 && status < 500) {
    const code = codeForStatus(status)
    const message =
      FRAMEWORK_MESSAGES[status] ??
      (code === 'invalid_request' ? error.message : code.replace(/_/g, ' '))
    return { body: errorBody(code, message, status), headers: {} }
  }
  log.error({ err: error }, 'unhandled error')
  // A 5xx never carries the error's own message: it could hold SQL, paths or a stack.
  return { body: errorBody('internal_error', 'internal server error'), headers: {} }
}

/** An error as an outcome: its status, its own headers, its Error body. */
export function errorOutcome(error: unknown, log: ErrorLog): Outcome {
  const { body, headers } = toErrorBody(error as Error, log)
  return {
    status: body.status,
    headers: Object.entries(headers).flat(),
    body: JSON.stringify(body),
  }
}

/** An Error body from a listener with no request id of its own (the metrics port). */
export function plainErrorOutcome(
  code: ErrorCode,
  message: string,
  headers: Record<string, string> = {},
): Outcome {
  const body = errorBody(code, message)
  return {
    status: body.status,
    headers: ['cache-control', 'no-store', ...Object.entries(headers).flat()],
    body: JSON.stringify(body),
  }
}

const REASONS: Record<number, string> = {
  400: 'Bad Request',
  408: 'Request Timeout',
  414: 'URI Too Long',
  431: 'Request Header Fields Too Large',
}

export interface CommonHeadersOptions {
  /** Headers of the transport (HSTS over TLS). */
  transport: Record<string, string>
  /** The deprecation headers of a deprecated operation. */
  deprecation: Record<string, string>
}

/** The headers every response carries, in the order they are sent. */
export class CommonHeaders {
  private readonly plain: string[]
  private readonly deprecated: string[]

  constructor(o: CommonHeadersOptions) {
    this.plain = ['cache-control', 'no-store', ...Object.entries(o.transport).flat()]
    this.deprecated = [...this.plain, ...Object.entries(o.deprecation).flat()]
  }

  /** A fresh list: the request id, no caching, the transport's, and a deprecated operation's. */
  headers(requestId: string, deprecated = false): string[] {
    const headers = ['x-request-id', requestId]
    for (const h of deprecated ? this.deprecated : this.plain) headers.push(h)
    return headers
  }

  /**
   * A whole HTTP/1.1 error response for a connection the parser gave up on before any routing,
   * closing it: there is no request to answer through.
   */
  clientError(status: number, message: string): string {
    const body = JSON.stringify(errorBody('invalid_request', message, status))
    const headers = this.headers(randomUUID())
    let head = `HTTP/1.1 ${status} ${REASONS[status] ?? 'Bad Request'}\r\nContent-Type: ${JSON_CONTENT_TYPE}\r\nContent-Length: ${Buffer.byteLength(body)}\r\n`
    for (let i = 0; i < headers.length; i += 2) head += `${headers[i]}: ${headers[i + 1]}\r\n`
    return `${head}Connection: close\r\n\r\n${body}`
  }
}

/** Sets `name` in a flat header list: in its place when present, else at the end. */
export function setHeader(headers: string[], name: string, value: string): void {
  for (let i = 0; i < headers.length; i += 2) {
    if (headers[i] === name) {
      headers[i + 1] = value
      return
    }
  }
  headers.push(name, value)
}
