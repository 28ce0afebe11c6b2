import { isIPv6 } from 'node:net'

/** An IPv6 address as its 8 groups of 16 bits; undefined for anything else. */
function ipv6Groups(address: string): number[] | undefined {
  const bare = address.split('%')[0] ?? ''
  if (!isIPv6(bare)) return undefined
  let text = bare
  // A dotted IPv4 tail (`::ffff:192.0.2.1`) is the last two groups.
  const dotted = /^(.*:)(\d+)\.(\d+)\.(\d+)\.(\d+)$/.exec(text)
  if (dotted) {
    const [, head, a, b, c, d] = dotted.map(String)
    text = `${head}${((Number(a) << 8) | Number(b)).toString(16)}:${((Number(c) << 8) | Number(d)).toString(16)}`
  }
  const [left = '', right] = text.split('::')
  const parse = (part: string) =>
    part === '' ? [] : part.split(':').map((group) => Number.parseInt(group, 16))
  const head = parse(left)
  if (right === undefined) return head
  const tail = parse(right)
  return [...head, ...new Array<number>(8 - head.length - tail.length).fill(0), ...tail]
}

/** `::ffff:a.b.c.d`: an IPv4 address as a dual-stack socket reports it. */
const isIpv4Mapped = (groups: number[]) =>
  groups.slice(0, 5).every((group) => group === 0) && groups[5] === 0xffff

/** The first `count` groups of an IPv6 address and the prefix length they make, e.g. `2001:db8:1::/48`. */
const prefixOf = (groups: number[], count: number) =>
  `${groups
    .slice(0, count)
    .map((group) => group.toString(16))
    .join(':')}::/${count * 16}`

/**
 * The client address a per-address throttle counts by. One IPv6 subscriber gets a whole /64 (and
 * picks addresses in it at will), so an IPv6 address counts as its /64; an IPv4-mapped one
 * (`::ffff:192.0.2.1`, what a dual-stack socket reports) as the IPv4 address it is.
 */
export function throttleAddress(ip: string): string {
  const groups = ipv6Groups(ip)
  if (groups === undefined) return ip
  if (isIpv4Mapped(groups)) {
    const [g6 = 0, g7 = 0] = groups.slice(6)
    return `${g6 >> 8}.${g6 & 0xff}.${g7 >> 8}.${g7 & 0xff}`
  }
  return prefixOf(groups, 4)
}

/**
 * How many times a throttle's per-address limit its client's /48 may take in all: a site given a /48
 * holds 65,536 /64s, and rotating them must not give it as many allowances. 16 leaves room for the
 * households of an ISP's /48 (each a /56 or /64 of it) that use a route at once.
 */
export const NETWORK_LIMIT_MULTIPLE = 16

/**
 * The network a per-address throttle also counts an IPv6 client by: its /48 (`2001:db8:1::/48`),
 * the largest allocation one site is normally given (RFC 6177). Undefined for IPv4 (mapped or not),
 * which counts by its address alone.
 */
export function throttleNetwork(ip: string): string | undefined {
  const groups = ipv6Groups(ip)
  return groups === undefined || isIpv4Mapped(groups) ? undefined : prefixOf(groups, 3)
}

/** `make(network)` for an IPv6 client's /48, undefined for IPv4: a per-address rule's network key. */
export function keyByNetwork(ip: string, make: (network: string) => string): string | undefined {
  const network = throttleNetwork(ip)
  return network === undefined ? undefined : make(network)
}
