import type { IncomingMessage } from 'node:http'
import proxyaddr from '@fastify/proxy-addr'
import { throttleAddress } from '../rate-limit/address.ts'

/**
 * The client an upgrade request comes from, as Fastify's request.ip sees it: behind TRUSTED_PROXIES
 * the nearest X-Forwarded-For address not trusted (upgrades never reach Fastify, so it is done here),
 * keyed as every per-address limit is: an IPv6 address by its /64, an IPv4-mapped one as IPv4.
 */
export function createClientAddress(trustedProxies: readonly string[]) {
  const trust = trustedProxies.length > 0 ? proxyaddr.compile([...trustedProxies]) : () => false
  return (request: IncomingMessage): string => throttleAddress(proxyaddr(request, trust))
}
