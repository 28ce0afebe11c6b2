import Echo from 'laravel-echo'
import Pusher from 'pusher-js'
import { config } from './config.js'

/**
 * Laravel Echo over pusher-js against this API's Pusher-protocol socket server (Reverb settings).
 * Channels are authorized through `http`, the axios instance that carries the session cookie.
 */
export function createEcho(http) {
  const { key, host, port, scheme } = config.reverb
  const echo = new Echo({
    broadcaster: 'reverb',
    key,
    wsHost: host,
    wsPort: port,
    wssPort: port,
    forceTLS: scheme === 'https',
    enabledTransports: ['ws', 'wss'],
    Pusher,
    // pusher-js's own auth request is an XHR without credentials: across origins it carries no
    // session cookie and gets a 401. Axios sends the cookies (and the XSRF header).
    channelAuthorization: {
      customHandler: ({ socketId, channelName }, callback) => {
        http
          .post('/api/broadcasting/auth', { socket_id: socketId, channel_name: channelName })
          .then((response) => callback(null, response.data))
          .catch((error) => callback(error, null))
      },
    },
  })
  // Echo registers X-Socket-Id only on a global axios; this instance needs it too, so the API leaves
  // this tab out of the broadcasts its own requests cause (Laravel's toOthers()).
  http.interceptors.request.use((request) => {
    const socketId = echo.socketId()
    if (socketId) request.headers['X-Socket-Id'] = socketId
    return request
  })
  return echo
}

/** Calls `onChange` with the socket's state ('connecting', 'connected', ...) as it changes. */
export function watchConnection(echo, onChange) {
  const connection = echo.connector.pusher.connection
  onChange(connection.state)
  connection.bind('state_change', ({ current }) => onChange(current))
}
