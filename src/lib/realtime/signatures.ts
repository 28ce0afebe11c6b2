import { createHash, createHmac, timingSafeEqual } from 'node:crypto'

const hmac = (secret: string, text: string) => createHmac('sha256', secret).update(text).digest('hex')

// Equal lengths first (a hash of each), so the comparison takes the same time whatever was sent.
const digest = (value: string) => createHash('sha256').update(value).digest()
const same = (a: string, b: string) => timingSafeEqual(digest(a), digest(b))

/** `KEY:hmac` for a private (or, with `channelData`, presence) channel, over exactly these strings. */
export function channelAuth(
  key: string,
  secret: string,
  socketId: string,
  channel: string,
  channelData?: string,
) {
  const text = channelData === undefined ? `${socketId}:${channel}` : `${socketId}:${channel}:${channelData}`
  return `${key}:${hmac(secret, text)}`
}

/** Whether `auth` is what this server would have signed for these exact strings (constant time). */
export function validChannelAuth(
  key: string,
  secret: string,
  socketId: string,
  channel: string,
  auth: unknown,
  channelData?: string,
): boolean {
  return typeof auth === 'string' && same(auth, channelAuth(key, secret, socketId, channel, channelData))
}

export const md5 = (body: string | Buffer) => createHash('md5').update(body).digest('hex')

/**
 * Pusher's signed HTTP request: HMAC-SHA256 of `METHOD\npath\nsorted query` (every parameter but
 * auth_signature, keys lowercased and sorted), in constant time.
 */
export function validRequestSignature(
  secret: string,
  method: string,
  path: string,
  query: Record<string, string>,
): boolean {
  const signature = query.auth_signature
  if (typeof signature !== 'string') return false
  const params = Object.keys(query)
    .filter((name) => name !== 'auth_signature')
    .sort()
    .map((name) => `${name}=${query[name]}`)
    .join('&')
  return same(signature, hmac(secret, `${method}\n${path}\n${params}`))
}
