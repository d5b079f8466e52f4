// The service's logger settings: JSON lines for machines, or one readable line per event on a
// terminal. Either way the Authorization header is censored, should anything ever log headers.
import { createRequire } from 'node:module'
import type { FastifyServerOptions } from 'fastify'
import type PinoPretty from 'pino-pretty'
import type { Config } from '../config.js'
import { LogDestination } from './log-destination.js'

type LoggerOptions = Exclude<FastifyServerOptions['logger'], boolean | undefined>

/** `auto` means readable when a person is watching the output, JSON when it goes elsewhere. */
export function isPretty(format: Config['logFormat'], isTTY: boolean): boolean {
  return format === 'pretty' || (format === 'auto' && isTTY)
}

export function loggerOptions(
  config: Pick<Config, 'logLevel' | 'logFormat'>,
  stdout: { isTTY?: boolean } = process.stdout,
): LoggerOptions {
  const options: LoggerOptions = {
    level: config.logLevel,
    redact: {
      paths: ['req.headers.authorization', 'headers.authorization'],
      censor: '[redacted]',
    },
  }
  options.stream = isPretty(config.logFormat, stdout.isTTY === true)
    ? prettyStream(stdout.isTTY === true)
    : new LogDestination(1)
  return options
}

/** Takes JSON log lines and writes each as one readable line on stdout. */
export function prettyStream(colorize: boolean) {
  // Synchronous, not a worker transport: lines keep their order with the start-up lines, and none
  // is in flight at exit. Required on first use only, so a JSON-logging service starts faster.
  const pretty = createRequire(import.meta.url)('pino-pretty') as typeof PinoPretty
  return pretty({
    sync: true,
    colorize,
    singleLine: true,
    translateTime: 'SYS:HH:MM:ss.l',
    // A request reads `GET /v1/pets 200 listPets 1.2ms request completed {"requestId":...}`.
    messageFormat: '{if method}{method} {url} {status} {operation} {durationMs}ms {end}{msg}',
    ignore: 'pid,hostname,method,url,status,operation,durationMs',
  })
}
