import { createHmac, timingSafeEqual } from 'node:crypto'

/**
 * Laravel's URL::temporarySignedRoute: `expires` (unix seconds) is added to the query and the whole
 * URL is signed with HMAC-SHA256 under APP_KEY; the signature goes last.
 */
export function signUrl(url: string, appKey: string, expiresAt: Date): string {
  const unsigned = new URL(url)
  unsigned.searchParams.set('expires', String(Math.floor(expiresAt.getTime() / 1000)))
  unsigned.searchParams.delete('signature')
  const signature = hmac(unsigned.toString(), appKey)
  unsigned.searchParams.set('signature', signature)
  return unsigned.toString()
}

export type SignedUrlCheck = 'valid' | 'invalid' | 'expired'

/**
 * Checks a URL made by signUrl as received: rebuilt from `appUrl`'s origin, the request path and the
 * query without `signature`, in the order it came. A tampered link is invalid before it is expired.
 */
export function checkSignedUrl(
  appUrl: string,
  requestUrl: string,
  appKey: string,
  now: Date,
): SignedUrlCheck {
  const received = new URL(requestUrl, appUrl)
  const signature = received.searchParams.get('signature') ?? ''
  const rebuilt = new URL(received.pathname, appUrl)
  for (const [key, value] of received.searchParams) {
    if (key !== 'signature') rebuilt.searchParams.append(key, value)
  }
  const expected = Buffer.from(hmac(rebuilt.toString(), appKey))
  const given = Buffer.from(signature)
  if (given.length !== expected.length || !timingSafeEqual(given, expected)) return 'invalid'
  const expires = Number(received.searchParams.get('expires'))
  if (!Number.isFinite(expires) || expires * 1000 < now.getTime()) return 'expired'
  return 'valid'
}

const hmac = (value: string, appKey: string) => createHmac('sha256', appKey).update(value).digest('hex')
