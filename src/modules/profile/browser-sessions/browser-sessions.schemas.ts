import { type Static, Type } from 'typebox'

/** One of the user's sessions (or a remembered device) as Jetstream lists it, plus `last_active_at` and `remembered`. */
export const BrowserSessionResponse = Type.Object({
  agent: Type.Object({
    is_desktop: Type.Boolean(),
    platform: Type.Union([Type.String({ examples: ['OS X'] }), Type.Null()]),
    browser: Type.Union([Type.String({ examples: ['Chrome'] }), Type.Null()]),
  }),
  ip_address: Type.Union([Type.String({ examples: ['203.0.113.5'] }), Type.Null()]),
  is_current_device: Type.Boolean(),
  last_active: Type.String({ examples: ['2 minutes ago'] }),
  last_active_at: Type.String({ format: 'date-time', examples: ['2024-05-01T12:34:56.000000Z'] }),
  remembered: Type.Boolean({
    description:
      '"Remember me" keeps this device signed in: it comes back on a new session once this one ends. An entry whose session has ended already stands for the device alone.',
  }),
})
export type BrowserSessionResponse = Static<typeof BrowserSessionResponse>

export const BrowserSessionsResponse = Type.Array(BrowserSessionResponse)
