/**
 * Whether a socket's `Origin` header may connect (Reverb's allowed_origins, here whole origins).
 * Browsers always send Origin on a WebSocket handshake, so a foreign page is refused; a request
 * without one is a server-side client (pusher-js in Node, a backend), which could send any Origin
 * it liked, so refusing it would protect nothing. Reverb refuses it unless `*` is allowed.
 */
export function createOriginPolicy(allowed: readonly string[] | '*') {
  const origins = new Set(allowed === '*' ? [] : allowed)
  return (origin: string | undefined): boolean => {
    if (allowed === '*' || origin === undefined) return true
    // An opaque `null` (sandboxed frame, file:) matches no entry.
    return origins.has(origin.toLowerCase())
  }
}
