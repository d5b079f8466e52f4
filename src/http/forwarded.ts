// Who sent a request and how it was addressed behind proxies: X-Forwarded-For is walked from the
// right (the peer is hop 0) while hops are trusted, the last hop reached is the client, and
// X-Forwarded-Proto and -Host are read at that hop's place. Ranges are matched by proxy-addr.
import type { IncomingMessage } from 'node:http'
import { isIP } from 'node:net'
import type { TLSSocket } from 'node:tls'
import proxyAddr from '@fastify/proxy-addr'
import type { FastifyInstance, FastifyRequest } from 'fastify'
import { isAuthority } from './authority.js'

/**
 * PETSTORE_TRUST_PROXY: trust no peer (false), any (true), the nearest hops whatever their
 * address (a number), or proxies at these addresses and CIDRs, or proxy-addr's range names.
 */
export type TrustProxy = boolean | number | readonly string[]

/** Whether the hop at `address`, `hop` steps from the service (its peer is 0), is a proxy. */
type Trusts = (address: string, hop: number) => boolean

const RANGE_NAMES = ['loopback', 'linklocal', 'uniquelocal']

/** For the peer Node forgets once its connection closes: the client address is always one. */
const UNKNOWN_PEER = '0.0.0.0'

/** The eight groups of an IPv6 address (no zone) in hex, expanded from URL's canonical form. */
function ipv6Groups(address: string): string[] {
  const [head = '', tail = ''] = new URL(`http://[${address}]`).hostname.slice(1, -1).split('::')
  const left = head === '' ? [] : head.split(':')
  const right = tail === '' ? [] : tail.split(':')
  return [...left, ...new Array<string>(8 - left.length - right.length).fill('0'), ...right]
}

/** `::ffff:a.b.c.d` is an IPv4 address written for an IPv6 socket. */
const isIpv4Mapped = (g: string[]) => g.slice(0, 6).join(':') === '0:0:0:0:0:ffff'

/** ipaddr.js (under proxy-addr) reads the deprecated `::a.b.c.d` as `::ffff:a.b.c.d`: not so here. */
const compatible = (address: string) => address.replace(/^::(?=[0-9]+\.)/, '::0:')

/**
 * The trust rule of the setting. A list entry must be a range name or an address (no zone) with
 * an optional prefix length: proxy-addr alone also takes netmasks, `127.1`, zones, and
 * IPv4-mapped ranges wider than the IPv4 space, which match nothing.
 */
export function compileTrust(trust: TrustProxy): Trusts {
  if (typeof trust === 'boolean') return () => trust
  if (typeof trust === 'number') return (_address, hop) => hop < trust
  for (const entry of trust) {
    if (RANGE_NAMES.includes(entry)) continue
    const [, address = '', bits] = /^([^/%]*)(?:\/([0-9]{1,3}))?$/.exec(entry) ?? []
    const family = isIP(address)
    const mapped = family === 6 && bits !== undefined && isIpv4Mapped(ipv6Groups(address))
    if (family === 0 || (mapped && Number(bits) < 96)) throw new Error(`not a range: ${entry}`)
  }
  const trusts = proxyAddr.compile(trust.map(compatible))
  return (address, hop) => trusts(compatible(address), hop)
}

/**
 * The network failed authentications are counted by: an IPv4 address (an IPv4-mapped one too)
 * itself, an IPv6 address's /64, which a home or host is given and picks addresses in freely. A
 * zone is kept (a link of this host, which no client chooses); other text stands for itself.
 */
export function clientNetwork(address: string): string {
  const zone = address.indexOf('%')
  const ip = zone === -1 ? address : address.slice(0, zone)
  if (isIP(ip) !== 6) return isIP(ip) === 4 ? ip : address
  const g = ipv6Groups(ip)
  if (isIpv4Mapped(g)) {
    const n = Number.parseInt(g[6]! + g[7]!.padStart(4, '0'), 16)
    return [n >>> 24, (n >> 16) & 255, (n >> 8) & 255, n & 255].join('.')
  }
  return `${g.slice(0, 4).join(':')}::${zone === -1 ? '' : address.slice(zone)}/64`
}

/**
 * An X-Forwarded-For entry that may be a client address: an IP address (45 characters at most)
 * without a zone. Anything else (`unknown`, a port, any text) ends the walk, never keying logs.
 */
const isAddress = (entry: string) => entry.length <= 45 && !entry.includes('%') && isIP(entry) !== 0

/** The `n`th comma-separated entry from the right (1 is the last), trimmed; undefined if none. */
function entryFromRight(value: string | string[] | undefined, n: number): string | undefined {
  return typeof value === 'string' ? value.split(',').at(-n)?.trim() : undefined
}

export interface RequestOrigin {
  /** The client's address: always an IP address. */
  ip: string
  /** host[:port] as the client addressed the service, valid by authority.ts; '' when unsaid. */
  host: string
  protocol: 'http' | 'https'
}

/** Reads a request's origin by the setting's rule; each call reads the headers afresh. */
export type OriginOf = (req: IncomingMessage) => RequestOrigin

export function createOriginOf(trust: TrustProxy): OriginOf {
  const trusts = compileTrust(trust)
  return (req) => {
    const h = req.headers
    const protocol = (req.socket as TLSSocket).encrypted ? 'https' : 'http'
    const authority = req.httpVersionMajor === 2 ? h[':authority'] : undefined
    const host = (typeof authority === 'string' ? authority : h.host) ?? ''
    const forwardedFor = h['x-forwarded-for']
    let ip = req.socket.remoteAddress ?? UNKNOWN_PEER
    let hop = 0
    if (typeof forwardedFor !== 'string' || !trusts(ip, 0)) return { ip, host, protocol }
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
 * Fastify's own trustProxy reads X-Forwarded-Proto and -Host at their last entry whatever hop the
 * address came from, unchecked, and takes any X-Forwarded-For entry as a client.
 */
export function registerForwarding(app: FastifyInstance, originOf: OriginOf): void {
  for (const key of ['ip', 'host', 'protocol'] as const) {
    app.decorateRequest(key, {
      getter(this: FastifyRequest) {
        return originOf(this.raw)[key]
      },
    })
  }
}
