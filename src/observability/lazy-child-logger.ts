// A request's logger, made only when a line is written through it: most requests write none but
// their request line, which goes to the root logger (request-log.ts), and a pino child per
// request would cost each of them its bindings' serialization.
import type { FastifyBaseLogger } from 'fastify'
import type { Bindings, ChildLoggerOptions, LogFn } from 'pino'

const call = (fn: LogFn, log: FastifyBaseLogger, args: unknown[]) =>
  (fn as (...a: unknown[]) => void).apply(log, args)

class LazyChild {
  private made: FastifyBaseLogger | undefined

  constructor(
    private readonly parent: FastifyBaseLogger,
    private readonly bindings: Bindings,
    private readonly options: ChildLoggerOptions,
  ) {}

  private get log(): FastifyBaseLogger {
    this.made ??= this.parent.child(this.bindings, this.options)
    return this.made
  }

  get level(): string {
    return this.log.level
  }

  set level(level: string) {
    this.log.level = level
  }

  fatal(...args: unknown[]): void {
    call(this.log.fatal, this.log, args)
  }

  error(...args: unknown[]): void {
    call(this.log.error, this.log, args)
  }

  warn(...args: unknown[]): void {
    call(this.log.warn, this.log, args)
  }

  info(...args: unknown[]): void {
    call(this.log.info, this.log, args)
  }

  debug(...args: unknown[]): void {
    call(this.log.debug, this.log, args)
  }

  trace(...args: unknown[]): void {
    call(this.log.trace, this.log, args)
  }

  silent(...args: unknown[]): void {
    call(this.log.silent, this.log, args)
  }

  child(bindings: Bindings, options?: ChildLoggerOptions): FastifyBaseLogger {
    return this.log.child(bindings, options)
  }
}

/** Fastify's childLoggerFactory: the request's logger, made at its first line. */
export function lazyChildLogger(
  logger: FastifyBaseLogger,
  bindings: Bindings,
  options: ChildLoggerOptions,
): FastifyBaseLogger {
  return new LazyChild(logger, bindings, options) as unknown as FastifyBaseLogger
}
