// What a Host header, an HTTP/2 :authority or an X-Forwarded-Host must be: RFC 3986 host[:port],
// the host an IPv4 address, a bracketed IPv6 address or a name in the DNS form that http(s)
// names take (RFC 3986 §3.2.2, RFC 1123 labels; `_` allowed, as service names carry it), the
// port from 1 to 65535.
import { isIPv6 } from 'node:net'

export interface Authority {
  /** As written: a name, a dotted IPv4 address, or `[IPv6]`. */
  host: string
  /** null when the authority names none (the scheme's default). */
  port: number | null
}

/** A name of 253 characters, its final dot and `:65535`: nothing longer is valid, or read. */
const MAX_AUTHORITY_LENGTH = 253 + 1 + 6

/** An RFC 1123 label, `_` allowed: 1 to 63 characters, no `-` at either end. */
const LABEL = '[A-Za-z0-9_](?:[A-Za-z0-9_-]{0,61}[A-Za-z0-9_])?'
const NAME = new RegExp(`^(?:${LABEL}\\.)*${LABEL}$`)
const DEC_OCTET = '(?:25[0-5]|2[0-4][0-9]|1[0-9]{2}|[1-9]?[0-9])'
const IPV4 = new RegExp(`^${DEC_OCTET}(?:\\.${DEC_OCTET}){3}$`)
/** A last label URL parsers (WHATWG) read as a number: the name would be another host's address. */
const NUMERIC_LAST_LABEL = /(?:^|\.)(?:0x[0-9a-f]*|[0-9]+)$/i
const PORT = /^:[0-9]{1,5}$/

/** Whether `host` is a dotted IPv4 address or a name of at most 253 characters (and a dot). */
function isHost(host: string): boolean {
  const name = host.endsWith('.') ? host.slice(0, -1) : host
  if (name.length > 253 || !NAME.test(name)) return false
  return !NUMERIC_LAST_LABEL.test(name) || (name === host && IPV4.test(name))
}

/** Where the host of a valid host[:port] ends (its length when there is no port), or -1. */
function hostEnd(text: string): number {
  if (text.length === 0 || text.length > MAX_AUTHORITY_LENGTH) return -1
  let end: number
  if (text.startsWith('[')) {
    end = text.indexOf(']') + 1
    const literal = text.slice(1, end - 1)
    // A zone identifier names an interface of the client's own host: it has no meaning here.
    if (end === 0 || literal.includes('%') || !isIPv6(literal)) return -1
  } else {
    end = text.includes(':') ? text.indexOf(':') : text.length
    if (!isHost(text.slice(0, end))) return -1
  }
  if (end === text.length) return end
  const port = Number(text.slice(end + 1))
  return PORT.test(text.slice(end)) && port >= 1 && port <= 65535 ? end : -1
}

export function isAuthority(text: string): boolean {
  return hostEnd(text) !== -1
}

/** The authority's host and port, or null when it is not a valid host[:port]. */
export function parseAuthority(text: string): Authority | null {
  const end = hostEnd(text)
  if (end === -1) return null
  return {
    host: text.slice(0, end),
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
