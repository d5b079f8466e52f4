// Address ranges (IP addresses and CIDRs) and whether an address lies in one, in JavaScript:
// net.BlockList builds a native object per check, too costly on every request's path.
import { isIP } from 'node:net'

/** An address as 16-bit groups: two for IPv4 (an IPv4-mapped IPv6 address too), eight for IPv6. */
type Groups = ArrayLike<number>

export interface Range {
  groups: Groups
  /** Leading bits that must match. */
  prefix: number
}

/** The groups of a dotted IPv4 address already known to be one, read without splitting. */
function ipv4Groups(text: string, from = 0): [number, number] {
  let value = 0
  let octet = 0
  for (let i = from; i < text.length; i++) {
    const c = text.charCodeAt(i)
    if (c === 46 /* . */) {
      value = value * 256 + octet
      octet = 0
    } else octet = octet * 10 + c - 48
  }
  value = value * 256 + octet
  return [Math.floor(value / 65536), value % 65536]
}

/** The groups of an IPv6 address already known to be one (no zone), read without splitting. */
function ipv6Groups(text: string): Groups {
  const head: number[] = []
  const tail: number[] = []
  let part = head
  let group = 0
  let digits = 0
  for (let i = 0; i < text.length; i++) {
    const c = text.charCodeAt(i)
    if (c === 58 /* : */) {
      if (digits > 0) part.push(group)
      // The second colon of `::`: the groups read from here on end the address.
      else if (i > 0) part = tail
      group = 0
      digits = 0
    } else if (c === 46 /* . */) {
      part.push(...ipv4Groups(text, text.lastIndexOf(':', i) + 1))
      digits = 0
      break
    } else {
      group = group * 16 + Number.parseInt(text[i]!, 16)
      digits++
    }
  }
  if (digits > 0) part.push(group)
  const groups = new Array<number>(8).fill(0)
  for (let i = 0; i < head.length; i++) groups[i] = head[i]!
  for (let i = 0; i < tail.length; i++) groups[8 - tail.length + i] = tail[i]!
  return groups
}

/** `::ffff:a.b.c.d` is an IPv4 address written for an IPv6 socket. */
function isIpv4Mapped(g: Groups): boolean {
  return g[0] === 0 && g[1] === 0 && g[2] === 0 && g[3] === 0 && g[4] === 0 && g[5] === 0xffff
}

/** The groups of an IP address (a zone dropped), or null when the text is none. */
function groupsOf(address: string): Groups | null {
  const zone = address.indexOf('%')
  const text = zone === -1 ? address : address.slice(0, zone)
  const family = isIP(text)
  if (family === 4) return ipv4Groups(text)
  if (family !== 6) return null
  const groups = ipv6Groups(text)
  return isIpv4Mapped(groups) ? [groups[6]!, groups[7]!] : groups
}

/**
 * The network a client address stands for, by which failed authentications are counted: an IPv4
 * address itself (an IPv4-mapped one too), and the /64 of an IPv6 address, since a home or a host
 * is given a /64 and picks addresses in it freely. A zone is kept: it names a link of this host,
 * which no client chooses. Text that is no IP address stands for itself.
 */
export function clientNetwork(address: string): string {
  const g = groupsOf(address)
  if (g === null) return address
  if (g.length === 2) return `${g[0]! >> 8}.${g[0]! & 255}.${g[1]! >> 8}.${g[1]! & 255}`
  const zone = address.indexOf('%')
  const prefix = `${g[0]!.toString(16)}:${g[1]!.toString(16)}:${g[2]!.toString(16)}:${g[3]!.toString(16)}::`
  return zone === -1 ? `${prefix}/64` : `${prefix}${address.slice(zone)}/64`
}

/**
 * A range from `address` or `address/prefix`; throws when it is neither (a zone, a prefix out of
 * range, an IPv4-mapped range wider than the IPv4 space).
 */
export function parseRange(entry: string): Range {
  const slash = entry.indexOf('/')
  const address = slash === -1 ? entry : entry.slice(0, slash)
  const family = isIP(address)
  if (family === 0 || address.includes('%')) throw new Error(`not an IP address: ${address}`)
  const max = family === 4 ? 32 : 128
  const bits = slash === -1 ? String(max) : entry.slice(slash + 1)
  const prefix = /^[0-9]{1,3}$/.test(bits) ? Number(bits) : 0
  if (prefix < 1 || prefix > max) throw new Error(`not a prefix length: ${entry}`)
  const groups = groupsOf(address)!
  if (family === 6 && groups.length === 2) {
    if (prefix < 96) throw new Error(`wider than the IPv4 space: ${entry}`)
    return { groups, prefix: prefix - 96 }
  }
  return { groups, prefix }
}

/** Whether `address` lies in one of `ranges`; false for anything not an IP address. */
export function inRanges(ranges: readonly Range[], address: string): boolean {
  const groups = groupsOf(address)
  if (groups === null) return false
  for (const range of ranges) {
    if (range.groups.length !== groups.length) continue
    let left = range.prefix
    let i = 0
    for (; left > 0; i++, left -= 16) {
      const mask = left >= 16 ? 0xffff : (0xffff << (16 - left)) & 0xffff
      if ((groups[i]! & mask) !== (range.groups[i]! & mask)) break
    }
    if (left <= 0) return true
  }
  return false
}
