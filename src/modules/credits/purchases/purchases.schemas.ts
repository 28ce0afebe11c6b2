import { Type } from 'typebox'
import { CATALOG_ID_PATTERN } from '../billing.catalog.ts'

export const BuyCreditsParams = Type.Object({
  package: Type.String({ pattern: CATALOG_ID_PATTERN, description: 'A package id from GET /api/credits.' }),
})

export const WebhookResponse = Type.Object({ received: Type.Literal(true) })
