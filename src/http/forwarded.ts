// Who sent a request and how it was addressed behind proxies, by one rule for the routes and the
// fast lane: X-Forwarded-For is walked from the right (the peer is hop 0) while hops are trusted,
// the last hop reached is the client, and X-Forwarded-Proto and -Host are read at that hop's place.
import type { IncomingMessage } from 'node:http'
import { isIP } from 'node:net'
import type { TLSSocket } from 'node:tls'
import type { FastifyInstance, FastifyRequest } from 'fastify'
import { inRanges, parseRange, type Range } from './address-ranges.js'
import { isAuthority } from './authority.js'

/**
 * PETSTORE_TRUST_PROXY: trust no peer (false), any (true), the nearest hops whatever their
 * address (a number), or proxies at these addresses and CIDRs (a list).
 */
export type TrustProxy = boolean | number | readonly string[]

export interface RequestOrigin {
  /** The client's address: always an IP address. */
  ip: string
  /** host[:port] as the client addressed the service, valid by authority.ts; '' when unsaid. */
  host: string
  protocol: 'http' | 'https'
}

/** The names proxy-addr (Fastify's trustProxy) gives to address ranges. */
const NAMED_RANGES = new Map([
  ['loopback', ['127.0.0.1/8', '::1/128']],
  ['linklocal', ['169.254.0.0/16', 'fe80::/10']],
  ['uniquelocal', ['10.0.0.0/8', '172.16.0.0/12', '192.168.0.0/16', 'fc00::/7']],
])

/** The longest text of an IP address (an IPv6 address ending in a dotted IPv4 one). */
const MAX_ADDRESS_LENGTH = 45
/**
 * Node forgets the peer of a connection closed before anything asked for it; the unspecified
 * address stands for it there, so that the client address is an address in every case.
 */
const UNKNOWN_PEER = '0.0.0.0'

/** Whether the hop at `address`, `hop` steps from the service (its peer is 0), is a proxy. */
type Trusts = (address: string, hop: number) => boolean

/** The trust rule of the setting; throws on a list entry that is no address, CIDR or range name. */
export function compileTrust(trust: TrustProxy): Trusts {
  if (trust === true) return () => true
  if (trust === false) return () => false
  if (typeof trust === 'number') return (_address, hop) => hop < trust
  const ranges: Range[] = trust.flatMap((entry) =>
    (NAMED_RANGES.get(entry) ?? [entry]).map(parseRange),
  )
  return (address) => inRanges(ranges, address)
}

/**
 * An X-Forwarded-For entry that may be a client address: an IP address, without the zone of
 * another host's interface. Anything else (`unknown`, `unix:`, a port, any text a client wrote)
 * ends the walk, so it can never become the address that logs and rate limits are keyed by.
 */
function isAddress(entry: string): boolean {
  return entry.length <= MAX_ADDRESS_LENGTH && !entry.includes('%') && isIP(entry) !== 0
}

/** The `n`th comma-separated entry from the right (1 is the last), trimmed; undefined if none. */
function entryFromRight(value: string | string[] | undefined, n: number): string | undefined {
  if (typeof value !== 'string') return undefined
  let end = value.length
  for (let i = 1; ; i++) {
    const comma = value.lastIndexOf(',', end - 1)
    if (i === n) return value.slice(comma + 1, end).trim()
    if (comma === -1) return undefined
    end = comma
  }
}

/** The host the request names itself: HTTP/2's :authority before Host; '' when it names none. */
function connectionHost(req: IncomingMessage): string {
  const h = req.headers
  const authority = req.httpVersionMajor === 2 ? h[':authority'] : undefined
  return (typeof authority === 'string' ? authority : h.host) ?? ''
}

/** Reads a request's origin by the setting's rule; each call reads the headers afresh. */
export type OriginOf = (req: IncomingMessage) => RequestOrigin

export function createOriginOf(trust: TrustProxy): OriginOf {
  const trusts = compileTrust(trust)
  return (req) => {
    const protocol = (req.socket as TLSSocket).encrypted ? 'https' : 'http'
    const peer = req.socket.remoteAddress ?? UNKNOWN_PEER
    const host = connectionHost(req)
    const forwardedFor = req.headers['x-forwarded-for']
    if (typeof forwardedFor !== 'string' || !trusts(peer, 0)) return { ip: peer, host, protocol }
    let ip = peer
    let hop = 0
    for (let end = forwardedFor.length; end > 0; ) {
      const comma = forwardedFor.lastIndexOf(',', end - 1)
      const entry = forwardedFor.slice(comma + 1, end).trim()
      if (!isAddress(entry)) break
      ip = entry
      hop++
      if (!trusts(entry, hop) || comma === -1) break
      end = comma
    }
    if (hop === 0) return { ip, host, protocol }
    const h = req.headers
    const forwardedProto = entryFromRight(h['x-forwarded-proto'], hop)?.toLowerCase()
    const forwardedHost = entryFromRight(h['x-forwarded-host'], hop)
    return {
      ip,
      host: forwardedHost !== undefined && isAuthority(forwardedHost) ? forwardedHost : host,
      protocol: forwardedProto === 'https' || forwardedProto === 'http' ? forwardedProto : protocol,
    }
  }
}

/**
 * Gives Fastify's request.ip, host and protocol (and so hostname and port) this module's rule.
 * Fastify's own trustProxy must be off: its getters would stand in the way of these, and it reads
 * X-Forwarded-Proto and -Host at their last entry whatever hop the address came from.
 */
export function registerForwarding(app: FastifyInstance, originOf: OriginOf): void {
  app.decorateRequest('ip', {
    getter(this: FastifyRequest) {
      return originOf(this.raw).ip
    },
  })
  app.decorateRequest('host', {
    getter(this: FastifyRequest) {
      return originOf(this.raw).host
    },
  })
  app.decorateRequest('protocol', {
    getter(this: FastifyRequest) {
      return originOf(this.raw).protocol
    },
  })
}
