// Whether a line built without pino (request-line-json.ts) may go straight to a logger's stream:
// only when the logger formats as pino does by default, and a probe line comes out identical.
import type { FastifyBaseLogger } from 'fastify'
import pino from 'pino'
import { COMPLETED, type CompletedRequest, requestLine } from './request-line.js'
import { INFO, type LineJson } from './request-line-json.js'

/** What writing to a pino logger's stream directly needs of its internals. */
export interface PinoStream {
  stream: { write: (line: string) => unknown }
  /** The logger's bindings as JSON text, `,"pid":…`. */
  chindings: string
  asJson: (...args: unknown[]) => unknown
}

/**
 * The logger's stream and bindings, or null unless it formats as pino does by default: epoch
 * time, no mixin, no hooks, no message prefix, a stream that wants no metadata.
 */
export function defaultPinoStream(logger: FastifyBaseLogger): PinoStream | null {
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
    return null
  }
  return {
    stream: stream as PinoStream['stream'],
    chindings,
    asJson: asJson as PinoStream['asJson'],
  }
}

/** Strings that need escaping: a control character; quotes, a backslash, a lone surrogate. */
const PROBE: CompletedRequest = {
  requestId: 'probe-1',
  operation: 'getPet',
  method: 'GET',
  url: '/v1/pets/1?q=\t',
  status: 200,
  elapsedMs: 1.23456,
  apiKeyName: 'probe \u00e9 "key" \\ \ud800',
  remoteAddress: undefined,
}

/** Whether `line` builds the probe's line with the very bytes of pino's own `asJson`. */
export function writesAsPino(logger: FastifyBaseLogger, target: PinoStream, line: LineJson) {
  const probeTime = ',"time":0'
  const expected = target.asJson.call(logger, requestLine(PROBE), COMPLETED, INFO, probeTime)
  return expected === line(PROBE, `{"level":${INFO}${probeTime}${target.chindings}`)
}
