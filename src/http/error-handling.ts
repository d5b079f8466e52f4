// Every error, from every layer, leaves as the one Error body with a code from the fixed set.
import { randomUUID } from 'node:crypto'
import type { Socket } from 'node:net'
import type { FastifyBaseLogger, FastifyError, FastifyInstance, FastifyReply } from 'fastify'
import { ApiError, codeForStatus, type ErrorBody, errorBody } from '../errors.js'
import { StorageUnavailableError } from '../storage/errors.js'
import { shownPath } from './request-target.js'

interface ValidationIssue {
  keyword: string
  instancePath: string
  message?: string
  params: Record<string, unknown>
  parentSchema?: { minLength?: number; maxLength?: number; 'x-pattern-message'?: string }
}

const PARTS: Record<string, (name: string) => string> = {
  body: (name) => `field '${name}'`,
  querystring: (name) => `query parameter '${name}'`,
  params: (name) => `path parameter '${name}'`,
  headers: (name) => `header '${name}'`,
}

const TYPE_NAMES: Record<string, string> = {
  string: 'a string',
  object: 'a JSON object',
  array: 'an array',
  boolean: 'a boolean',
}

/** A field name from the body as a message repeats it: the whole body may be one long name. */
const SHOWN_NAME_MAX = 64
const shownName = (name: string) =>
  name.length <= SHOWN_NAME_MAX ? name : `${name.slice(0, SHOWN_NAME_MAX)}…`

/** A 400 message that names the offending field or parameter. */
export function describeValidation(context: string, issue: ValidationIssue): string {
  const name = issue.instancePath.split('/').filter(Boolean).join('.')
  const what = name
    ? (PARTS[context] ?? PARTS.body!)(name)
    : context === 'body'
      ? 'request body'
      : context
  const p = issue.params
  switch (issue.keyword) {
    case 'required':
      return context === 'body'
        ? `missing required field '${p.missingProperty}'`
        : `missing required ${context} '${p.missingProperty}'`
    case 'additionalProperties':
      return p.additionalProperty === 'id'
        ? `field 'id' must not be sent: the service assigns ids`
        : `unknown field '${shownName(String(p.additionalProperty))}'`
    case 'type':
      return `${what} must be ${TYPE_NAMES[String(p.type)] ?? p.type}`
    case 'enum':
      return `${what} must be one of: ${(p.allowedValues as unknown[]).join(', ')}`
    case 'minLength':
    case 'maxLength': {
      const { minLength = 0, maxLength } = issue.parentSchema ?? {}
      const range =
        maxLength === undefined ? `at least ${minLength}` : `${minLength} to ${maxLength}`
      return `${what} must be ${range} characters long`
    }
    case 'pattern':
      return `${what} ${issue.parentSchema?.['x-pattern-message'] ?? 'has an invalid format'}`
    default:
      return `${what} ${issue.message ?? 'is invalid'}`
  }
}

const FRAMEWORK_MESSAGES: Partial<Record<number, string>> = {
  413: 'request body is larger than 65536 bytes',
  415: 'request body must be application/json',
}

function send(reply: FastifyReply, body: ErrorBody, headers: Record<string, string> = {}) {
  reply.code(body.status).headers(headers).type('application/json; charset=utf-8').send(body)
}

/** The Error body and extra headers of an error; `log` (the request's) hears of unexpected ones. */
export function toErrorBody(
  error: FastifyError | ApiError,
  log: Pick<FastifyBaseLogger, 'error' | 'warn'>,
): { body: ErrorBody; headers: Record<string, string> } {
  if (error instanceof ApiError) return { body: error.toBody(), headers: error.headers }
  if (error instanceof StorageUnavailableError) {
    // Logged as a warning: the operator must see it, but it is the database's state, not a bug.
    log.warn({ err: error }, 'storage unavailable')
    return {
      body: errorBody('service_unavailable', error.message),
      headers: { 'retry-after': String(error.retryAfterSeconds) },
    }
  }
  if (error.validation && error.validation.length > 0) {
    const issue = error.validation[0] as ValidationIssue
    const context = error.validationContext ?? 'body'
    return { body: errorBody('invalid_request', describeValidation(context, issue)), headers: {} }
  }
  const status = error.statusCode ?? 500
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

/**
 * Methods the 405's Allow header may list. OPTIONS is not among them: its one route (CORS
 * preflights, when on) matches every path.
 */
const METHODS = ['DELETE', 'GET', 'HEAD', 'PATCH', 'POST', 'PUT']

export interface ErrorHandlingOptions {
  /** While draining, responses keep `Connection: close`: clients move to another instance. */
  isDraining: () => boolean
}

export function registerErrorHandling(app: FastifyInstance, opts: ErrorHandlingOptions): void {
  app.setErrorHandler((error: FastifyError | ApiError, request, reply) => {
    const { body, headers } = toErrorBody(error, request.log)
    // Fastify asks to close the connection after a body it could not take (too large, malformed);
    // Node then reads and discards what is left of the body and keeps the connection. Closing with
    // unread bytes would reset it, and a client still sending would never read this answer.
    if (reply.hasHeader('connection') && !opts.isDraining()) reply.removeHeader('connection')
    send(reply, body, headers)
  })

  app.setNotFoundHandler((request, reply) => {
    // The router itself says which methods it would take at this target, however it is spelled.
    const allowed = METHODS.filter((method) => app.findRoute({ method, url: request.url }) !== null)
    if (allowed.length > 0) {
      send(
        reply,
        errorBody(
          'method_not_allowed',
          `${request.method} is not allowed here; use ${allowed.join(', ')}`,
        ),
        { allow: allowed.join(', ') },
      )
      return
    }
    send(reply, errorBody('not_found', `no resource at ${shownPath(request.url)}`))
  })
}

/** The message of a 408, on every transport. */
export const REQUEST_TIMED_OUT = 'the request did not arrive in full in time'

/** What a body that stops arriving fails with, for the error handler to answer 408. */
export function requestTimedOut(): Error {
  return Object.assign(new Error(REQUEST_TIMED_OUT), { statusCode: 408 })
}

const CLIENT_ERROR_STATUS: Record<string, number> = {
  HPE_HEADER_OVERFLOW: 431,
  HPE_URI_TOO_LONG: 414,
  ERR_HTTP_REQUEST_TIMEOUT: 408,
}

const CLIENT_ERRORS: Record<number, { reason: string; message: string }> = {
  400: { reason: 'Bad Request', message: 'malformed HTTP request' },
  408: { reason: 'Request Timeout', message: REQUEST_TIMED_OUT },
  414: { reason: 'URI Too Long', message: 'request URI is too long' },
  431: { reason: 'Request Header Fields Too Large', message: 'request headers are too large' },
}

/**
 * Errors the HTTP parser raises before any routing (a malformed request line, headers over the
 * limit, a request not in within the request timeout) still get an Error body, where the socket
 * can still take one. A connection that never sent a byte is closed without one, and so is one
 * whose request was already answered (its body was still arriving). `extraHeaders` are the
 * transport's own (HSTS over TLS).
 */
export function handleClientError(
  error: Error & { code?: string },
  socket: Socket,
  extraHeaders: Record<string, string> = {},
  answered: (socket: Socket) => boolean = () => false,
): void {
  if (
    !socket.writable ||
    error.code === 'ECONNRESET' ||
    socket.bytesRead === 0 ||
    answered(socket)
  ) {
    socket.destroy()
    return
  }
  const status = CLIENT_ERROR_STATUS[error.code ?? ''] ?? 400
  const { reason, message } = CLIENT_ERRORS[status]!
  const body = JSON.stringify(errorBody('invalid_request', message, status))
  socket.end(
    `HTTP/1.1 ${status} ${reason}\r\nContent-Type: application/json; charset=utf-8\r\n` +
      `Content-Length: ${Buffer.byteLength(body)}\r\nCache-Control: no-store\r\n` +
      `X-Request-Id: ${randomUUID()}\r\n` +
      Object.entries(extraHeaders)
        .map(([name, value]) => `${name}: ${value}\r\n`)
        .join('') +
      `Connection: close\r\n\r\n${body}`,
  )
}
