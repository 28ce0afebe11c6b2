/** The Pusher Channels protocol (version 7), as pusher-js and Laravel Reverb speak it. */

import { randomInt } from 'node:crypto'

/** A frame from the server: `data` is a JSON-encoded string (pusher-js parses it again). */
export interface ServerFrame {
  event: string
  channel?: string
  data?: string
  /** Who sent a client event on a presence channel. */
  user_id?: string
}

/** Reverb's error codes (pusher-js reconnects or not by their range). */
export const PusherError = {
  appNotFound: { code: 4001, message: 'Application does not exist' },
  overQuota: { code: 4004, message: 'Application is over connection quota' },
  unauthorized: { code: 4009, message: 'Connection is unauthorized' },
  originNotAllowed: { code: 4009, message: 'Origin not allowed' },
  // A refused subscription, as Reverb refuses one (the socket stays).
  tooManyChannels: { code: 4009, message: 'Too many channels on this connection' },
  invalidMessage: { code: 4200, message: 'Invalid message format' },
  pongTimeout: { code: 4201, message: 'Pong reply not received in time' },
  rateLimited: { code: 4301, message: 'Rate limit exceeded' },
} as const

/** Close code for a stopping instance: 41xx makes pusher-js reconnect after a back-off. */
export const RECONNECT_LATER = { code: 4100, message: 'Server shutting down, reconnect' }

/** Close code for a socket whose unread backlog passed the bound: pusher-js reconnects after a back-off too. */
export const NOT_READING = { code: 4101, message: 'Client not reading, reconnect later' }

/**
 * Close code for a socket authorized more channels in its life than it may remember: 42xx makes
 * pusher-js reconnect at once, as a new socket that remembers nothing.
 */
export const TOO_MANY_GRANTS = { code: 4200, message: 'Too many channels authorized on this connection' }

const CHANNEL_NAME = /^[-a-zA-Z0-9_=@,.;]+$/
export const MAX_CHANNEL_NAME = 164

export type ChannelKind = 'public' | 'private' | 'presence'

/** The kind of a valid channel name, or null for a name Pusher refuses. */
export function channelKind(name: unknown): ChannelKind | null {
  if (typeof name !== 'string' || name.length > MAX_CHANNEL_NAME || !CHANNEL_NAME.test(name)) return null
  if (name.startsWith('presence-')) return 'presence'
  // Encrypted channels need a per-channel key this server does not hand out.
  if (name.startsWith('private-encrypted-')) return null
  if (name.startsWith('private-')) return 'private'
  return 'public'
}

/** One frame as text; `data` is encoded unless it already is a string. */
export function encodeFrame(event: string, data?: unknown, channel?: string, userId?: string): string {
  const frame: ServerFrame = { event }
  if (channel !== undefined) frame.channel = channel
  if (data !== undefined) frame.data = typeof data === 'string' ? data : JSON.stringify(data)
  if (userId !== undefined) frame.user_id = userId
  return JSON.stringify(frame)
}

export const errorFrame = (error: { code: number; message: string }) => encodeFrame('pusher:error', error)

/**
 * `"%d.%d"` with two random integers, as Reverb makes them, from the cryptographic source: a socket
 * id is what `/broadcasting/auth` signs for, so no one may work out another's from their own.
 */
export function newSocketId(): string {
  const part = () => randomInt(1, 1_000_000_001)
  return `${part()}.${part()}`
}

export const SOCKET_ID = /^\d{1,10}\.\d{1,10}$/
