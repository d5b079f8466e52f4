// The routes' errors and the body parser's: every one answered as replies.ts writes errors.
import type { Socket } from 'node:net'
import type { FastifyError, FastifyInstance, FastifyReply } from 'fastify'
import { ApiError } from '../errors.js'
import { type CommonHeaders, errorOutcome, JSON_CONTENT_TYPE, type Outcome } from './replies.js'
import { shownPath } from './request-target.js'

/** Sends an outcome through Fastify, over the headers the hooks set. */
export function sendOutcome(reply: FastifyReply, o: Outcome): FastifyReply {
  reply.code(o.status)
  const h = o.headers
  for (let i = 0; i < h.length; i += 2) reply.header(h[i]!, h[i + 1])
  return reply.type(JSON_CONTENT_TYPE).send(o.body)
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
    const outcome = errorOutcome(error, request.log)
    // Fastify asks to close the connection after a body its parser refused (too large, not JSON);
    // Node then reads and discards what is left of the body and keeps the connection. Closing with
    // unread bytes would reset it, and a client still sending would never read this answer.
    if (reply.hasHeader('connection') && !opts.isDraining()) reply.removeHeader('connection')
    sendOutcome(reply, outcome)
  })

  app.setNotFoundHandler((request, reply) => {
    // The router itself says which methods it would take at this target, however it is spelled.
    const allowed = METHODS.filter((method) => app.findRoute({ method, url: request.url }) !== null)
    const error =
      allowed.length > 0
        ? new ApiError(
            'method_not_allowed',
            `${request.method} is not allowed here; use ${allowed.join(', ')}`,
            { allow: allowed.join(', ') },
          )
        : new ApiError('not_found', `no resource at ${shownPath(request.url)}`)
    sendOutcome(reply, errorOutcome(error, request.log))
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

export const CLIENT_ERROR_MESSAGES: Record<number, string> = {
  400: 'malformed HTTP request',
  408: REQUEST_TIMED_OUT,
  414: 'request URI is too long',
  431: 'request headers are too large',
}

/**
 * The parser's errors before any routing get an Error body where the socket can still take one;
 * a connection that sent nothing, or whose request was already answered, is just closed.
 */
export function handleClientError(
  error: Error & { code?: string },
  socket: Socket,
  commonHeaders: CommonHeaders,
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
  socket.end(commonHeaders.clientError(status, CLIENT_ERROR_MESSAGES[status]!))
}
