// The parsers of the settings table (config.ts): each returns the value or throws.
import { durationParser } from './duration.js'
import { compileTrust, type TrustProxy } from './http/forwarded.js'

/** Reads a setting's text; throws when it is invalid (loadConfig names the setting). */
export type Parser<T> = (raw: string) => T

/** One of a fixed set of words. */
function oneOf<const T extends readonly string[]>(values: T): Parser<T[number]> {
  return (raw) => {
    const value = values.find((v) => v === raw)
    if (value === undefined) throw new Error()
    return value
  }
}

/** A setting that is off (null) when empty. */
export const orNull =
  <T>(parse: Parser<T>): Parser<T | null> =>
  (raw) =>
    raw === '' ? null : parse(raw)

export const integer =
  (min: number, max: number): Parser<number> =>
  (raw) => {
    if (!/^\d+$/.test(raw)) throw new Error()
    const n = Number(raw)
    if (n < min || n > max) throw new Error()
    return n
  }

const settingDuration = durationParser(['ms', 's', 'm', 'h'])

/** A duration such as `500ms`, `30s`, `1m`, `2h`; returns milliseconds. */
export const duration: Parser<number> = (raw) => {
  const ms = settingDuration(raw)
  if (ms === null) throw new Error()
  return ms
}

export const durationBetween =
  (minMs: number, maxMs: number): Parser<number> =>
  (raw) => {
    const ms = duration(raw)
    if (ms < minMs || ms > maxMs) throw new Error()
    return ms
  }

export const instant: Parser<Date> = (raw) => {
  // An ISO 8601 instant with an explicit zone, so the meaning never depends on the machine's TZ.
  if (!/^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}(:\d{2}(\.\d+)?)?(Z|[+-]\d{2}:\d{2})$/.test(raw))
    throw new Error()
  const d = new Date(raw)
  if (Number.isNaN(d.getTime())) throw new Error()
  return d
}

export const baseUrl: Parser<string> = (raw) => {
  const u = new URL(raw)
  const trimmed = raw.replace(/\/+$/, '')
  if ((u.protocol !== 'http:' && u.protocol !== 'https:') || !trimmed.endsWith('/v1')) {
    throw new Error()
  }
  return trimmed
}

export const boolean: Parser<boolean> = (raw) => {
  if (raw === 'true' || raw === '1') return true
  if (raw === 'false' || raw === '0') return false
  throw new Error()
}

export const databaseUrl: Parser<string> = (raw) => {
  if (raw.startsWith('sqlite:') && raw.length > 'sqlite:'.length) return raw
  if (/^postgres(ql)?:\/\//.test(raw)) {
    new URL(raw)
    return raw
  }
  throw new Error()
}

export const apiKeyList: Parser<string[]> = (raw) => {
  const keys = raw
    .split(',')
    .map((k) => k.trim())
    .filter((k) => k !== '')
  // Keys travel in an Authorization header: they must be visible ASCII and long enough to be secret.
  if (keys.some((k) => !/^[\x21-\x7e]{16,512}$/.test(k))) throw new Error()
  return keys
}

export const logLevels = ['fatal', 'error', 'warn', 'info', 'debug', 'trace', 'silent'] as const
export const logLevel = oneOf(logLevels)

export const path: Parser<string> = (raw) => {
  if (raw === '' || raw.includes('\0')) throw new Error()
  return raw
}

export const originList: Parser<string[]> = (raw) => {
  const origins = raw
    .split(',')
    .map((o) => o.trim())
    .filter((o) => o !== '')
  for (const o of origins) {
    const u = new URL(o)
    // An origin is scheme, host and port only: anything more would never match a browser's.
    if ((u.protocol !== 'http:' && u.protocol !== 'https:') || u.origin !== o) throw new Error()
  }
  return origins
}

export const optionalPort: Parser<number | null> = (raw) =>
  raw === 'off' ? null : integer(0, 65535)(raw)

export const rateLimitStore = oneOf(['memory', 'redis'])

export const redisUrl: Parser<string> = (raw) => {
  if (!/^rediss?:\/\//.test(raw)) throw new Error()
  new URL(raw)
  return raw
}

export const logFormat = oneOf(['json', 'pretty', 'auto'])

/** Longest chain of proxies a hop count may name. */
export const MAX_PROXY_HOPS = 64

export const trustProxy: Parser<TrustProxy> = (raw) => {
  if (raw === 'true') return true
  if (raw === 'false') return false
  if (/^[0-9]+$/.test(raw)) {
    const hops = integer(0, MAX_PROXY_HOPS)(raw)
    return hops === 0 ? false : hops
  }
  const ranges = raw
    .split(',')
    .map((r) => r.trim())
    .filter((r) => r !== '')
  if (ranges.length === 0) throw new Error()
  compileTrust(ranges)
  return ranges
}

export const text: Parser<string> = (raw) => {
  if (raw === '') throw new Error()
  return raw
}

/** An absolute http(s) URL, as a link in the OpenAPI document. */
export const httpUrl: Parser<string> = (raw) => {
  const u = new URL(raw)
  if (u.protocol !== 'http:' && u.protocol !== 'https:') throw new Error()
  return raw
}

/** One address, `local@domain`, with nothing a mail header could take as a separator. */
export const emailAddress: Parser<string> = (raw) => {
  if (!/^[^\s@<>(),;:"]+@[A-Za-z0-9-]+(\.[A-Za-z0-9-]+)+$/.test(raw)) throw new Error()
  return raw
}
