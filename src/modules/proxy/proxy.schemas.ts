import { Type } from 'typebox'
import { MessageResponse, ValidationResponse } from '../../lib/http-schemas.ts'

/** An upstream id (strategy, condition, market, news item, broker account): opaque text, one path segment. */
export const UpstreamId = Type.String({ minLength: 1, maxLength: 191 })

/**
 * A ticker symbol. It may hold any character, `/` included (`BTC/USD`), sent percent-encoded
 * (`BTC%2FUSD`); it always reaches the upstream as one encoded segment.
 */
export const TickerSymbol = Type.String({ minLength: 1, maxLength: 191, examples: ['AAPL', 'BTC/USD'] })

// Free JSON bodies: room for a large strategy, far below the app's 1 MiB; deeper nesting is refused.
export const MAX_FREE_BODY_BYTES = 256 * 1024
export const MAX_FREE_BODY_DEPTH = 32

/**
 * A JSON object the service does not interpret (strategy and condition payloads, action bodies):
 * forwarded to the upstream unchanged but for the CSRF `_token`. A record, not an empty object
 * schema, so Ajv's `removeAdditional: 'all'` keeps every member.
 */
export const FreeBody = Type.Record(Type.String(), Type.Unknown(), {
  description: `Any JSON object, up to ${MAX_FREE_BODY_BYTES / 1024} KiB and ${MAX_FREE_BODY_DEPTH} levels deep; forwarded to the upstream unchanged.`,
  examples: [{ name: 'Breakout', symbol: 'AAPL' }],
})

/** Whatever the upstream's `data` member holds; its fields are not part of this API's contract. */
export const UpstreamPayload = Type.Unknown({ description: "The upstream answer's `data` member." })

/** Create and update answers keep the envelope. */
export const UpstreamEnvelope = Type.Object({ data: Type.Unknown() })

/** The upstream's paginated lists, answered whole. */
export const UpstreamPage = Type.Object({
  data: Type.Array(Type.Unknown()),
  links: Type.Unknown(),
  meta: Type.Unknown(),
})

/** A failed upstream call: 500 `{"error": "..."}` (spec); any other 500 is Laravel's `{message}`. */
export const ProxyFailureResponse = Type.Union([Type.Object({ error: Type.String() }), MessageResponse])

/** The statuses every proxied route can answer besides its own success. */
export const proxyErrorResponses = {
  422: ValidationResponse,
  '4xx': MessageResponse,
  500: ProxyFailureResponse,
}
