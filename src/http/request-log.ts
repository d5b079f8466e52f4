// One `request completed` line per request, and the request's own logger, made when first used.
// Headers are never logged, so no key can leak through a log.
import type { Http2ServerRequest } from 'node:http2'
import {
  type FastifyBaseLogger,
  type FastifyReply,
  type FastifyRequest,
  LogController,
} from 'fastify'
import type { Bindings, ChildLoggerOptions } from 'pino'

/**
 * Longest `url` a line keeps, so that a client's long URLs cannot flood the log. The start of a
 * URL is what tells requests apart, and its length says the rest was there.
 */
export const LOGGED_URL_MAX = 256

/** The URL as logged: at most LOGGED_URL_MAX characters, then `…` and the whole length. */
export function loggedUrl(url: string): string {
  if (url.length <= LOGGED_URL_MAX) return url
  // Never between the two halves of a surrogate pair, which JSON would have to escape.
  const last = url.charCodeAt(LOGGED_URL_MAX - 1)
  const end = last >= 0xd800 && last <= 0xdbff ? LOGGED_URL_MAX - 1 : LOGGED_URL_MAX
  return `${url.slice(0, end)}…(${url.length} characters)`
}

export class RequestLogController extends LogController {
  /** HTTP/1 requests whose line Fastify has asked for. */
  private readonly reported = new WeakSet<FastifyRequest>()

  constructor() {
    super({ requestIdLogLabel: 'requestId' })
  }

  /**
   * No `incoming request` line. Fastify reports an HTTP/1 answer once it is written in full, and
   * one cut short (its client stopped reading, or went away) not at all: that one gets its line
   * when its connection ends. One that never began has no status to tell, and no line.
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
    if (request.raw.httpVersionMajor === 1) {
      this.reported.add(request)
      this.completed(error, request, reply, true)
    } else {
      // Fastify hears an HTTP/2 `finish` when the stream closes, however much of the answer went.
      const { stream } = request.raw as unknown as Http2ServerRequest
      this.completed(error, request, reply, stream.writableFinished)
    }
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
    const fields = {
      requestId: request.id,
      // The same name the metrics use: `unknown` when no route matched.
      operation: request.routeOptions.config.operation ?? 'unknown',
      method: request.method,
      url: loggedUrl(request.url),
      status: reply.statusCode,
      // pino leaves out undefined fields.
      delivered: delivered ? undefined : false,
      durationMs: Math.round(reply.elapsedTime * 100) / 100,
      apiKeyName: request.apiKey?.name,
      remoteAddress: request.ip,
    }
    // Through the root logger, naming its request itself: a request's child logger costs its
    // bindings' serialization, about 4% of a get (docs/performance.md).
    const log = reply.server.log
    if (error) log.error({ ...fields, err: error }, 'request errored')
    else log.info(fields, 'request completed')
  }
}

const LEVELS = ['fatal', 'error', 'warn', 'info', 'debug', 'trace', 'silent'] as const

/** A request's logger that makes its pino child at its first line: most requests log none. */
class LazyChild {
  private made: FastifyBaseLogger | undefined

  constructor(
    private readonly parent: FastifyBaseLogger,
    private readonly bindings: Bindings,
    private readonly options: ChildLoggerOptions,
  ) {}

  get log(): FastifyBaseLogger {
    this.made ??= this.parent.child(this.bindings, this.options)
    return this.made
  }

  get level(): string {
    return this.log.level
  }

  set level(level: string) {
    this.log.level = level
  }

  child(bindings: Bindings, options?: ChildLoggerOptions): FastifyBaseLogger {
    return this.log.child(bindings, options)
  }
}
for (const level of LEVELS) {
  Object.defineProperty(LazyChild.prototype, level, {
    value(this: LazyChild, ...args: unknown[]) {
      return Reflect.apply(this.log[level], this.log, args)
    },
  })
}

/** Fastify's childLoggerFactory. */
export function lazyChildLogger(
  parent: FastifyBaseLogger,
  bindings: Bindings,
  options: ChildLoggerOptions,
): FastifyBaseLogger {
  return new LazyChild(parent, bindings, options) as unknown as FastifyBaseLogger
}
