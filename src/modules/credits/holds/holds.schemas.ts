import { type Static, Type } from 'typebox'

const Timestamp = Type.String({ format: 'date-time', examples: ['2024-05-01T12:34:56.000000Z'] })
const OrderId = (description: string) =>
  Type.String({ minLength: 1, maxLength: 191, description, examples: ['PO-20240501-0001'] })

// numeric(20, 4) holds up to 16 integer digits; a hold beyond a trillion credits is a mistake.
export const MAX_CREDITS = 1_000_000_000_000

export const CreateHoldBody = Type.Object({
  broker_parent_order_id: OrderId('The automated parent order at the broker; one hold per order.'),
  broker_account_hash: Type.Optional(Type.Union([Type.String({ maxLength: 191 }), Type.Null()])),
  // Not nullable: with type coercion a null branch would turn 0 (or false) into null, the default.
  credits_amount: Type.Optional(
    Type.Number({
      exclusiveMinimum: 0,
      maximum: MAX_CREDITS,
      description: 'At most 4 decimals; HOLD_DEFAULT_CREDITS when left out.',
    }),
  ),
})
export type CreateHoldBody = Static<typeof CreateHoldBody>

export const HoldOrderBody = Type.Object({
  broker_parent_order_id: OrderId('The parent order whose hold to settle.'),
})
export type HoldOrderBody = Static<typeof HoldOrderBody>

export const TransferHoldBody = Type.Object({
  from_broker_parent_order_id: OrderId('The parent order holding the credits now.'),
  to_broker_parent_order_id: OrderId('The parent order that takes the hold over.'),
})
export type TransferHoldBody = Static<typeof TransferHoldBody>

export const HoldResponse = Type.Object({
  id: Type.Integer(),
  status: Type.Union([Type.Literal('held'), Type.Literal('captured'), Type.Literal('released')]),
  broker_parent_order_id: Type.String(),
  broker_account_hash: Type.Union([Type.String(), Type.Null()]),
  credits_amount: Type.Number(),
  transferred_from: Type.Union([Type.String(), Type.Null()], {
    description: 'The parent order the hold was transferred from, if any.',
  }),
  captured_at: Type.Union([Timestamp, Type.Null()]),
  released_at: Type.Union([Timestamp, Type.Null()]),
  created_at: Timestamp,
  updated_at: Timestamp,
})
export type HoldResponse = Static<typeof HoldResponse>

export const CapturedResponse = Type.Object({ captured: Type.Boolean() })
export const ReleasedResponse = Type.Object({ released: Type.Boolean() })
export const TransferredResponse = Type.Object({ transferred: Type.Boolean() })
