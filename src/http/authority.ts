// What a Host header, an HTTP/2 :authority or an X-Forwarded-Host must be: RFC 3986 host[:port],
// the host an IPv4 address, a bracketed IPv6 address or a name in the DNS form that http(s)
// names take (RFC 3986 §3.2.2, RFC 1123 labels; `_` allowed, as service names carry it), the
// port from 1 to 65535. Read by scanning, since every request's Host is read.
import { isIPv6 } from 'node:net'

export interface Authority {
  /** As written: a name, a dotted IPv4 address, or `[IPv6]`. */
  host: string
  /** null when the authority names none (the scheme's default). */
  port: number | null
}

/** A name of 253 characters, its final dot and `:65535`: nothing longer is valid, or read. */
const MAX_AUTHORITY_LENGTH = 253 + 1 + 6

const DOT = 46
const HYPHEN = 45
const COLON = 58

const isDigit = (c: number) => c >= 48 && c <= 57
const isHex = (c: number) => isDigit(c) || (c >= 65 && c <= 70) || (c >= 97 && c <= 102)
const isNameChar = (c: number) =>
  isDigit(c) || (c >= 65 && c <= 90) || (c >= 97 && c <= 122) || c === HYPHEN || c === 95 /* _ */

function isDigits(text: string, from: number, to: number): boolean {
  for (let i = from; i < to; i++) if (!isDigit(text.charCodeAt(i))) return false
  return true
}

/**
 * Whether text[from, to) is a number to URL parsers (WHATWG): digits, or `0x` and hex digits. A
 * name whose last label is one reads as an IPv4 address, which would then be another host.
 */
function isNumeric(text: string, from: number, to: number): boolean {
  if (to - from >= 2 && text.charCodeAt(from) === 48 && (text.charCodeAt(from + 1) | 32) === 120) {
    for (let i = from + 2; i < to; i++) if (!isHex(text.charCodeAt(i))) return false
    return true
  }
  return isDigits(text, from, to)
}

/** A dec-octet of RFC 3986: 0 to 255 without a leading zero. */
function isDecOctet(text: string, from: number, to: number): boolean {
  const n = to - from
  if (n < 1 || n > 3 || (n > 1 && text.charCodeAt(from) === 48)) return false
  let value = 0
  for (let i = from; i < to; i++) {
    const c = text.charCodeAt(i)
    if (!isDigit(c)) return false
    value = value * 10 + c - 48
  }
  return value <= 255
}

/**
 * Whether text[0, end) is a dotted IPv4 address or a host name: labels of 1 to 63 name
 * characters not starting or ending with `-`, at most 253 in all, an optional final dot.
 */
function isHost(text: string, end: number): boolean {
  const last = text.charCodeAt(end - 1) === DOT ? end - 1 : end
  if (last < 1 || last > 253) return false
  let labels = 0
  let octets = 0
  let labelStart = 0
  for (let i = 0; i <= last; i++) {
    if (i < last && text.charCodeAt(i) !== DOT) {
      if (!isNameChar(text.charCodeAt(i))) return false
      continue
    }
    const length = i - labelStart
    if (length < 1 || length > 63) return false
    if (text.charCodeAt(labelStart) === HYPHEN || text.charCodeAt(i - 1) === HYPHEN) return false
    labels++
    if (isDecOctet(text, labelStart, i)) octets++
    if (i === last) {
      if (!isNumeric(text, labelStart, i)) return true
      return labels === 4 && octets === 4 && last === end
    }
    labelStart = i + 1
  }
  return false
}

/** Where the host of a valid host[:port] ends (its length when there is no port), or -1. */
function hostEnd(text: string): number {
  const length = text.length
  if (length === 0 || length > MAX_AUTHORITY_LENGTH) return -1
  let end: number
  if (text.charCodeAt(0) === 91 /* [ */) {
    end = text.indexOf(']') + 1
    if (end === 0) return -1
    const literal = text.slice(1, end - 1)
    // A zone identifier names an interface of the client's own host: it has no meaning here.
    if (literal.includes('%') || !isIPv6(literal)) return -1
  } else {
    const colon = text.indexOf(':')
    end = colon === -1 ? length : colon
    if (!isHost(text, end)) return -1
  }
  if (end === length) return end
  const digits = length - end - 1
  if (text.charCodeAt(end) !== COLON || digits < 1 || digits > 5) return -1
  let port = 0
  for (let i = end + 1; i < length; i++) {
    const c = text.charCodeAt(i)
    if (!isDigit(c)) return -1
    port = port * 10 + c - 48
  }
  return port >= 1 && port <= 65535 ? end : -1
}

/** Whether the text is a valid host[:port]. */
export function isAuthority(text: string): boolean {
  return hostEnd(text) !== -1
}

/** The authority's host and port, or null when it is not a valid host[:port]. */
export function parseAuthority(text: string): Authority | null {
  const end = hostEnd(text)
  if (end === -1) return null
  return {
    host: end === text.length ? text : text.slice(0, end),
    port: end === text.length ? null : Number(text.slice(end + 1)),
  }
}

/** Whether two authorities name the same host and port, `defaultPort` standing for none. */
export function sameAuthority(a: Authority, b: Authority, defaultPort: number): boolean {
  return (
    a.host.toLowerCase() === b.host.toLowerCase() &&
    (a.port ?? defaultPort) === (b.port ?? defaultPort)
  )
}
