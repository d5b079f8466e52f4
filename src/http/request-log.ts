// One log line per request, with what an operator asks of it: which operation, which key's
// owner, what status, how long. Headers are never logged, so no key can leak through a log.
import {
  type FastifyBaseLogger,
  type FastifyReply,
  type FastifyRequest,
  LogController,
} from 'fastify'
import pino from 'pino'

export interface CompletedRequest {
  /** Given where the logger does not bind it already (the hot path logs through the root logger). */
  requestId?: string
  operation: string
  method: string
  url: string | undefined
  status: number
  elapsedMs: number
  apiKeyName: string | undefined
  remoteAddress: string | undefined
}

/**
 * Longest `url` a line keeps: whole, one client's 15 KB URLs make ~880 MB of log in 10 s. The
 * start of a URL is what tells requests apart, and its length says the rest was there.
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

/** The fields of the `request completed` line, in their order, whichever path answered. */
export function requestLine(r: CompletedRequest) {
  return {
    requestId: r.requestId,
    operation: r.operation,
    method: r.method,
    url: r.url === undefined ? undefined : loggedUrl(r.url),
    status: r.status,
    durationMs: durationMs(r.elapsedMs),
    apiKeyName: r.apiKeyName,
    remoteAddress: r.remoteAddress,
  }
}

/** Milliseconds as logged: two decimals. */
function durationMs(elapsedMs: number): number {
  return Math.round(elapsedMs * 100) / 100
}

/**
 * durationMs(elapsedMs) as JSON writes it (`0.4`, `12.05`, `3`), from whole hundredths. Why: V8's
 * shortest decimal form of a fraction (HeapNumberToString) costs far more than writing two small
 * integers (docs/performance.md); a number of hundredths below 2^30 has exactly one decimal form
 * with at most two decimals, which is the shortest one that reads back as it.
 */
export function durationText(elapsedMs: number): string {
  const hundredths = Math.round(elapsedMs * 100)
  if (!(hundredths >= 0 && hundredths < 2 ** 30)) return String(durationMs(elapsedMs))
  const rest = hundredths % 100
  const whole = (hundredths - rest) / 100
  if (rest === 0) return `${whole}`
  if (rest % 10 === 0) return `${whole}.${rest / 10}`
  return `${whole}.${rest < 10 ? '0' : ''}${rest}`
}

const COMPLETED = 'request completed'
/** pino's number for `info`. */
const INFO = 30

/** Writes one `request completed` line. */
export type RequestLineWriter = (r: CompletedRequest) => void

/** Printable ASCII but `"` and `\`: such a string is its own JSON text between quotes. */
const PLAIN = /^[\x20\x21\x23-\x5b\x5d-\x7e]*$/
// biome-ignore lint/suspicious/noControlCharactersInRegex: JSON must escape exactly these.
const CONTROL = /[\x00-\x1f]/

/** A string as pino writes it (its asString): JSON.stringify only when long or with a control. */
function jsonString(s: string): string {
  if (PLAIN.test(s)) return `"${s}"`
  if (s.length > 100 || CONTROL.test(s)) return JSON.stringify(s)
  return `"${s.replace(/["\\]/g, '\\$&')}"`
}

/**
 * The hot path's `request completed` lines, written straight to the logger's stream with the
 * bytes pino would write.
 *
 * Why: pino's generic path (the level method, a field object, a loop over its keys with
 * serializer and stringifier lookups, every key and string scanned for escapes) is a sizeable
 * share of a get (docs/performance.md). Why the bytes are pino's: the writer is used only when
 * the logger formats as pino does by default (epoch time, no mixin, no hooks, no message prefix, a
 * stream that wants no metadata), and only once a probe line built both ways, by this function
 * and by pino's own `asJson`, came out identical; otherwise every line goes through
 * `logger.info`. The probe's strings need escaping, so that is compared too (a control character;
 * quotes, a backslash, a lone surrogate).
 */
export function requestLineWriter(logger: FastifyBaseLogger): RequestLineWriter {
  const viaPino: RequestLineWriter = (r) => logger.info(requestLine(r), COMPLETED)
  const sym = pino.symbols
  const internals = logger as unknown as Record<symbol, unknown>
  const stream = internals[sym.streamSym] as
    | { write?: (line: string) => unknown; [key: symbol]: unknown }
    | undefined
  const chindings = internals[sym.chindingsSym]
  const asJson = internals[sym.asJsonSym]
  const hooks = internals[sym.hooksSym] as
    | { logMethod?: unknown; streamWrite?: unknown }
    | undefined
  if (
    typeof stream?.write !== 'function' ||
    stream[sym.needsMetadataGsym] === true ||
    typeof chindings !== 'string' ||
    typeof asJson !== 'function' ||
    internals[sym.timeSym] !== pino.stdTimeFunctions.epochTime ||
    internals[sym.mixinSym] ||
    // Not in pino's types; a prefix is applied before asJson, so the probe would not show it.
    internals[(sym as unknown as Record<string, symbol>).msgPrefixSym!] !== undefined ||
    typeof (logger as unknown as pino.Logger).isLevelEnabled !== 'function' ||
    hooks?.logMethod !== undefined ||
    hooks?.streamWrite !== undefined
  ) {
    return viaPino
  }
  /**
   * A field's JSON text, `,"name":"value"`, remembered for the value it was last built for.
   * Why: consecutive lines mostly share their operation, method, key and client address; each
   * such field was checked for escapes and built from three pieces on every line, and V8 copies
   * a string built by `+` piece by piece when the log is written (docs/performance.md).
   */
  const lastField = (name: string) => {
    let value: string | undefined
    let text = ''
    return (v: string): string => {
      if (v !== value) {
        value = v
        text = `,"${name}":${jsonString(v)}`
      }
      return text
    }
  }
  const operationField = lastField('operation')
  const methodField = lastField('method')
  const keyField = lastField('apiKeyName')
  const addressField = lastField('remoteAddress')
  // The fields in requestLine's order; pino leaves out the undefined ones.
  const line = (r: CompletedRequest, head: string): string => {
    let s = head
    if (r.requestId !== undefined) s += `,"requestId":${jsonString(r.requestId)}`
    s += operationField(r.operation) + methodField(r.method)
    if (r.url !== undefined) s += `,"url":${jsonString(loggedUrl(r.url))}`
    s += `,"status":${r.status},"durationMs":${durationText(r.elapsedMs)}`
    if (r.apiKeyName !== undefined) s += keyField(r.apiKeyName)
    if (r.remoteAddress !== undefined) s += addressField(r.remoteAddress)
    return `${s},"msg":"${COMPLETED}"}\n`
  }
  const probe: CompletedRequest = {
    requestId: 'probe-1',
    operation: 'getPet',
    method: 'GET',
    url: '/v1/pets/1?q=\t',
    status: 200,
    elapsedMs: 1.23456,
    apiKeyName: 'probe \u00e9 "key" \\ \ud800',
    remoteAddress: undefined,
  }
  const probeTime = ',"time":0'
  const expected = (asJson as (...args: unknown[]) => unknown).call(
    logger,
    requestLine(probe),
    COMPLETED,
    INFO,
    probeTime,
  )
  if (expected !== line(probe, `{"level":${INFO}${probeTime}${chindings}`)) return viaPino
  const write = stream.write.bind(stream)
  const pinoLogger = logger as unknown as pino.Logger
  // The line's head, level, time and the logger's bindings, is the same for every line of a
  // millisecond: written once per millisecond, since Date.now() is past the small integers whose
  // text V8 keeps, and each costs a conversion.
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
  constructor() {
    super({ requestIdLogLabel: 'requestId' })
  }

  override incomingRequest(): void {}

  override requestCompleted(
    error: Error | null | undefined,
    request: FastifyRequest,
    reply: FastifyReply,
  ): void {
    const line = requestLine({
      // The same name the metrics use: `unknown` when no route matched.
      operation: request.routeOptions.config.operation ?? 'unknown',
      method: request.method,
      url: request.url,
      status: reply.statusCode,
      elapsedMs: reply.elapsedTime,
      apiKeyName: request.apiKey?.name,
      remoteAddress: request.ip,
    })
    if (error) reply.log.error({ ...line, err: error }, 'request errored')
    else reply.log.info(line, COMPLETED)
  }
}
