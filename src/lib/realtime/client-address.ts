import type { IncomingMessage } from 'node:http'
import { isIPv6 } from 'node:net'
import proxyaddr from '@fastify/proxy-addr'

/**
 * The client an upgrade request comes from, as Fastify's request.ip sees it: behind TRUSTED_PROXIES
 * the nearest X-Forwarded-For address not trusted. Upgrades never reach Fastify, so it is done here.
 */
export function createClientAddress(trustedProxies: readonly string[]) {
  const trust = trustedProxies.length > 0 ? proxyaddr.compile([...trustedProxies]) : () => false
  return (request: IncomingMessage): string => addressKey(proxyaddr(request, trust))
}

/**
 * The key a client's sockets are counted under: an IPv4 address, or an IPv6 address's /64 (one
 * subscriber is usually given a whole /64, so its addresses would otherwise be endless).
 */
export function addressKey(address: string): string {
  const mapped = /^::ffff:(\d{1,3}(?:\.\d{1,3}){3})$/i.exec(address)
  if (mapped) return mapped[1] as string
  if (!isIPv6(address)) return address
  const [head = '', tail = ''] = address.toLowerCase().split('::')
  const left = head ? head.split(':') : []
  const right = tail ? tail.split(':') : []
  // A trailing dotted IPv4 (64:ff9b::192.0.2.1) stands for two groups.
  const rightGroups = right.length + (tail.includes('.') ? 1 : 0)
  const groups = address.includes('::')
    ? [...left, ...Array<string>(Math.max(0, 8 - left.length - rightGroups)).fill('0'), ...right]
    : left
  return `${groups
    .slice(0, 4)
    .map((group) => group.replace(/^0+(?=.)/, ''))
    .join(':')}::/64`
}
