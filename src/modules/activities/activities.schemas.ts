import { type Static, type TSchema, Type } from 'typebox'

// Limits where the spec is silent; advanced_order_type's 32 is the spec's, the rest follow the columns.
export const MAX_PAYLOAD_BYTES = 16 * 1024
export const MAX_PAYLOAD_DEPTH = 32
export const MAX_DESCRIPTION_LENGTH = 5000
export const DEFAULT_LIST_LIMIT = 50
export const MAX_LIST_LIMIT = 100

// Laravel's `nullable`: left out, null, or an empty string (which Ajv reads as null, as Laravel's
// ConvertEmptyStringsToNull does). Null comes first so Ajv never coerces a null into the other type.
const nullable = <T extends TSchema>(schema: T) => Type.Optional(Type.Union([Type.Null(), schema]))

/**
 * Any JSON object. A record rather than an object schema, so Ajv's `removeAdditional: 'all'` keeps
 * every member, however deep.
 */
export const ActivityPayload = Type.Record(Type.String(), Type.Unknown(), {
  description: `Any JSON object, up to ${MAX_PAYLOAD_BYTES / 1024} KiB as compact JSON.`,
  examples: [{ side: 'buy', quantity: 10, legs: [{ type: 'stop', price: 182.5 }] }],
})

export const ActivityBody = Type.Object({
  type: Type.String({ minLength: 1, maxLength: 64, examples: ['order_placed'] }),
  description: nullable(Type.String({ maxLength: MAX_DESCRIPTION_LENGTH })),
  symbol: nullable(Type.String({ maxLength: 32, examples: ['AAPL'] })),
  broker_account_hash: nullable(Type.String({ maxLength: 191 })),
  broker_order_id: nullable(Type.String({ maxLength: 191 })),
  advanced_order_type: nullable(Type.String({ maxLength: 32, examples: ['bracket'] })),
  payload: nullable(ActivityPayload),
})
export type ActivityBody = Static<typeof ActivityBody>

const Timestamp = Type.String({ format: 'date-time', examples: ['2024-05-01T12:34:56.000000Z'] })
const NullableString = Type.Union([Type.String(), Type.Null()])

export const Activity = Type.Object({
  id: Type.Integer(),
  user_id: Type.Integer(),
  type: Type.String(),
  description: NullableString,
  symbol: NullableString,
  broker_account_hash: NullableString,
  broker_order_id: NullableString,
  advanced_order_type: NullableString,
  payload: Type.Union([ActivityPayload, Type.Null()]),
  created_at: Timestamp,
  updated_at: Timestamp,
})
export type Activity = Static<typeof Activity>

export const ActivityListQuery = Type.Object({
  limit: Type.Optional(
    Type.Integer({
      minimum: 1,
      maximum: MAX_LIST_LIMIT,
      default: DEFAULT_LIST_LIMIT,
      description: 'How many of the newest activities to answer.',
    }),
  ),
})

export const ActivityListResponse = Type.Object({ data: Type.Array(Activity) })

export const ActivityParams = Type.Object({
  id: Type.Integer({ minimum: 1, maximum: Number.MAX_SAFE_INTEGER }),
})

export const ActivityDeletedResponse = Type.Object({ message: Type.String() })
