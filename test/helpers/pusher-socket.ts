import WebSocket from 'ws'

/** A frame from the server, with `data` decoded as pusher-js decodes it (kept as sent in `rawData`). */
export interface Frame {
  event: string
  channel?: string
  data?: any
  rawData?: unknown
  user_id?: string
}

export interface Closed {
  code: number
  reason: string
  /** Date.now() when the close arrived. */
  at: number
}

/** The socket URL pusher-js opens for an app key on a base URL (`http://host:port`). */
export const pusherUrl = (baseUrl: string, key: string) =>
  `${baseUrl.replace(/^http/, 'ws')}/app/${encodeURIComponent(key)}?protocol=7&client=js&version=8.6.0&flash=false`

export interface PusherSocketOptions {
  autoPong?: boolean
  /** Handshake headers: `Origin` as a browser page sends it, `X-Forwarded-For` as a proxy adds it. */
  headers?: Record<string, string>
}

/**
 * A raw Pusher-protocol client over `ws`: records every frame, sends frames as pusher-js does, and
 * waits for what the server says. `autoPong: false` makes it ignore WebSocket-level pings too.
 */
export class PusherSocket {
  readonly ws: WebSocket
  readonly frames: Frame[] = []
  readonly closed: Promise<Closed>
  closedWith: Closed | undefined

  constructor(baseUrl: string, key: string, options: PusherSocketOptions = {}) {
    this.ws = new WebSocket(pusherUrl(baseUrl, key), {
      autoPong: options.autoPong ?? true,
      ...(options.headers ? { headers: options.headers } : {}),
    })
    this.ws.on('message', (raw) => this.frames.push(decode(raw.toString())))
    this.ws.on('error', () => {})
    this.closed = new Promise((resolve) => {
      this.ws.once('close', (code, reason) => {
        this.closedWith = { code, reason: reason.toString(), at: Date.now() }
        resolve(this.closedWith)
      })
    })
  }

  /** Connects and waits for pusher:connection_established. */
  static async open(baseUrl: string, key: string, options?: PusherSocketOptions): Promise<PusherSocket> {
    const socket = new PusherSocket(baseUrl, key, options)
    await socket.waitFor((f) => f.event === 'pusher:connection_established')
    return socket
  }

  /** The socket id from pusher:connection_established. */
  get socketId(): string {
    const established = this.frames.find((f) => f.event === 'pusher:connection_established')
    if (!established) throw new Error('not connected')
    return established.data.socket_id
  }

  get open(): boolean {
    return this.ws.readyState === WebSocket.OPEN
  }

  sendRaw(text: string | Buffer): void {
    this.ws.send(text)
  }

  send(event: string, data: unknown = {}, channel?: string): void {
    this.sendRaw(JSON.stringify(channel === undefined ? { event, data } : { event, data, channel }))
  }

  /** Where the frames received so far end: pass to `waitFor` to look only at later frames. */
  mark(): number {
    return this.frames.length
  }

  /** The first frame (from index `from`) that matches, waiting up to `ms` for it. */
  async waitFor(match: (frame: Frame) => boolean, ms = 3000, from = 0): Promise<Frame> {
    const until = Date.now() + ms
    for (;;) {
      const found = this.frames.slice(from).find(match)
      if (found) return found
      if (Date.now() > until) {
        throw new Error(`no matching frame within ${ms} ms; got ${JSON.stringify(this.frames.slice(from))}`)
      }
      await new Promise((resolve) => setTimeout(resolve, 10))
    }
  }

  /** Frames since `from` with this event name. */
  since(from: number, event?: string): Frame[] {
    return this.frames.slice(from).filter((f) => event === undefined || f.event === event)
  }

  /**
   * Sends pusher:subscribe and answers the server's reply: the channel's subscription_succeeded,
   * or a pusher:error.
   */
  async subscribe(channel: string, auth?: string, channelData?: string): Promise<Frame> {
    const from = this.mark()
    const data: Record<string, string> = { channel }
    if (auth !== undefined) data.auth = auth
    if (channelData !== undefined) data.channel_data = channelData
    this.send('pusher:subscribe', data)
    return this.waitFor(
      (f) =>
        (f.event === 'pusher_internal:subscription_succeeded' && f.channel === channel) ||
        f.event === 'pusher:error',
      3000,
      from,
    )
  }

  close(): void {
    if (this.ws.readyState === WebSocket.CONNECTING || this.ws.readyState === WebSocket.OPEN) this.ws.close()
  }

  /** Drops the TCP connection without a closing handshake. */
  terminate(): void {
    this.ws.terminate()
  }
}

function decode(text: string): Frame {
  const frame = JSON.parse(text) as Frame
  frame.rawData = frame.data
  if (typeof frame.data === 'string') {
    try {
      frame.data = JSON.parse(frame.data)
    } catch {
      // pusher-js keeps a string that is not JSON as it is
    }
  }
  return frame
}
