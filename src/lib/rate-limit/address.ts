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

/**
 * The client address a per-address throttle counts by. One IPv6 subscriber gets a whole /64 (and
 * picks addresses in it at will), so an IPv6 address counts as its /64; an IPv4-mapped one
 * (`::ffff:192.0.2.1`, what a dual-stack socket reports) as the IPv4 address it is.
 */
export function throttleAddress(ip: string): string {
  const groups = ipv6Groups(ip)
  if (groups === undefined) return ip
  const [g0, g1, g2, g3, g4, g5, g6 = 0, g7 = 0] = groups
  if (g0 === 0 && g1 === 0 && g2 === 0 && g3 === 0 && g4 === 0 && g5 === 0xffff) {
    return `${g6 >> 8}.${g6 & 0xff}.${g7 >> 8}.${g7 & 0xff}`
  }
  return `${groups
    .slice(0, 4)
    .map((group) => group.toString(16))
    .join(':')}::/64`
}
