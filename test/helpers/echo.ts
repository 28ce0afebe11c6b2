import Echo from 'laravel-echo'
import Pusher from 'pusher-js'
import type { TestApp } from './build-test-app.ts'
import type { TestClient } from './client.ts'

/**
 * A browser tab's real-time client: the real laravel-echo over the real pusher-js (Node build),
 * connected to the test app's own port, authorizing channels through POST /api/broadcasting/auth
 * with the signed-in client's cookies, as the app's axios authorizer does.
 */
export function echoFor(t: TestApp, client: TestClient): Echo<'reverb'> {
  return echoAt(t.baseUrl, t.config.realtime.key, client)
}

/** The same client for any base URL (`http://host:port`: an app, or a load balancer in front of some). */
export function echoAt(baseUrl: string, key: string, client: TestClient): Echo<'reverb'> {
  const port = Number(new URL(baseUrl).port)
  return new Echo({
    broadcaster: 'reverb',
    key,
    wsHost: new URL(baseUrl).hostname,
    wsPort: port,
    wssPort: port,
    forceTLS: false,
    enabledTransports: ['ws'],
    Pusher,
    channelAuthorization: {
      endpoint: '/api/broadcasting/auth',
      transport: 'ajax',
      customHandler: (
        params: { socketId: string; channelName: string },
        callback: (error: Error | null, data: { auth: string; channel_data?: string } | null) => void,
      ) => {
        client
          .post('/api/broadcasting/auth', { socket_id: params.socketId, channel_name: params.channelName })
          .then((res) =>
            res.status === 200
              ? callback(null, res.data)
              : callback(
                  Object.assign(new Error(`auth answered ${res.status}`), { status: res.status }),
                  null,
                ),
          )
          .catch((error: Error) => callback(error, null))
      },
    },
  } as never)
}

/** The socket id once connected. */
export async function connected(echo: Echo<'reverb'>): Promise<string> {
  const pusher = (echo.connector as unknown as { pusher: PusherClient }).pusher
  if (pusher.connection.state !== 'connected') {
    await new Promise<void>((resolve, reject) => {
      const timer = setTimeout(() => reject(new Error('socket did not connect')), 5000)
      pusher.connection.bind('connected', () => {
        clearTimeout(timer)
        resolve()
      })
    })
  }
  return pusher.connection.socket_id
}

/** Resolves once `check` holds (polled; it may be async), or rejects after `ms`. */
export async function eventually<T>(
  check: () => T | undefined | false | Promise<T | undefined | false>,
  ms = 3000,
): Promise<T> {
  const until = Date.now() + ms
  for (;;) {
    const value = await check()
    if (value) return value
    if (Date.now() > until) throw new Error('condition not met in time')
    await new Promise((resolve) => setTimeout(resolve, 20))
  }
}

/** Waits a little, for proving that something did not arrive. */
export const settle = (ms = 300) => new Promise((resolve) => setTimeout(resolve, ms))

/** The part of a pusher-js client the tests read. */
interface PusherClient {
  connection: { state: string; socket_id: string; bind(event: string, callback: () => void): void }
}
