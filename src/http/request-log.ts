// One log line per request, with what an operator asks of it (request-line.ts): on Fastify's path
// through its log controller, in the fast lane through requestLineWriter.
import type { Http2ServerRequest } from 'node:http2'
import {
  type FastifyBaseLogger,
  type FastifyReply,
  type FastifyRequest,
  LogController,
} from 'fastify'
import type pino from 'pino'
import { defaultPinoStream, type PinoStream, writesAsPino } from './pino-compat.js'
import { COMPLETED, type CompletedRequest, requestLine } from './request-line.js'
import { INFO, type LineJson, lineJson } from './request-line-json.js'

export {
  type CompletedRequest,
  durationText,
  LOGGED_URL_MAX,
  requestLine,
} from './request-line.js'

/** Writes one `request completed` line. */
export type RequestLineWriter = (r: CompletedRequest) => void

/**
 * The fast lane's `request completed` lines, written straight to the logger's stream with the
 * bytes pino would write, since pino's generic path is a sizeable share of a request. Where that
 * cannot be shown to match (pino-compat.ts), every line goes through `logger.info`.
 */
export function requestLineWriter(logger: FastifyBaseLogger): RequestLineWriter {
  const viaPino: RequestLineWriter = (r) => logger.info(requestLine(r), COMPLETED)
  const target = defaultPinoStream(logger)
  if (target === null) return viaPino
  const line = lineJson()
  if (!writesAsPino(logger, target, line)) return viaPino
  return directWriter(logger, target, line)
}

function directWriter(
  logger: FastifyBaseLogger,
  target: PinoStream,
  line: LineJson,
): RequestLineWriter {
  const write = target.stream.write.bind(target.stream)
  const pinoLogger = logger as unknown as pino.Logger
  const chindings = target.chindings
  // The line's head (level, time, the logger's bindings) is built once per millisecond: Date.now()
  // is past the small integers whose text V8 keeps, so each conversion costs.
  let timeMs = -1
  let head = ''
  return (r) => {
    if (!pinoLogger.isLevelEnabled('info')) return
    const now = Date.now()
    if (now !== timeMs) {
      timeMs = now
      head = `{"level":${INFO},"time":${now}${chindings}`
    }
    write(line(r, head))
  }
}

export class RequestLogController extends LogController {
  /** Made at the first line, from the root logger: the line names its request itself. */
  private write: RequestLineWriter | undefined
  /** HTTP/1 requests whose line Fastify has asked for. */
  private readonly reported = new WeakSet<FastifyRequest>()

  constructor() {
    super({ requestIdLogLabel: 'requestId' })
  }

  /**
   * Fastify reports an HTTP/1 answer once it is written in full, and one cut short (its client
   * stopped reading, or went away) not at all: that one gets its line when its connection ends.
   * One that never began (the client went before it) has no status to tell, and no line.
   */
  override incomingRequest(request: FastifyRequest, reply: FastifyReply): void {
    if (request.raw.httpVersionMajor !== 1) return
    const res = reply.raw
    res.once('close', () => {
      // An injected answer (light-my-request) is never written out: it says `finish` and no more.
      if (res.writableFinished || this.reported.has(request) || !res.headersSent) return
      this.completed(null, request, reply, false)
    })
  }

  override requestCompleted(
    error: Error | null | undefined,
    request: FastifyRequest,
    reply: FastifyReply,
  ): void {
    if (request.raw.httpVersionMajor === 1) this.reported.add(request)
    this.completed(error, request, reply, deliveredOverHttp2(request))
  }

  /** An answer cut short is its request line's `delivered: false`, not a line of its own. */
  override streamError(error: Error, request: FastifyRequest, reply: FastifyReply): void {
    if ((error as NodeJS.ErrnoException).code === 'ERR_STREAM_PREMATURE_CLOSE') return
    super.streamError(error, request, reply)
  }

  private completed(
    error: Error | null | undefined,
    request: FastifyRequest,
    reply: FastifyReply,
    delivered: boolean,
  ): void {
    const completed: CompletedRequest = {
      requestId: request.id,
      // The same name the metrics use: `unknown` when no route matched.
      operation: request.routeOptions.config.operation ?? 'unknown',
      method: request.method,
      url: request.url,
      status: reply.statusCode,
      elapsedMs: reply.elapsedTime,
      apiKeyName: request.apiKey?.name,
      remoteAddress: request.ip,
    }
    if (!delivered) completed.delivered = false
    if (error) {
      const { requestId: _, ...line } = requestLine(completed)
      reply.log.error({ ...line, err: error }, 'request errored')
    } else {
      this.write ??= requestLineWriter(reply.server.log)
      this.write(completed)
    }
  }
}

/**
 * Over HTTP/2, Fastify hears `finish` when the stream closes, however much of its answer went:
 * the answer was delivered when the stream's own writing side finished.
 */
function deliveredOverHttp2(request: FastifyRequest): boolean {
  if (request.raw.httpVersionMajor !== 2) return true
  return (request.raw as unknown as Http2ServerRequest).stream.writableFinished
}
