import { Type } from 'typebox'
import type { UserDataKind } from '../../db/schema/index.ts'

/** The per-user documents the app keeps here, each under `/api/user/{kind}`. */
export const USER_DATA_KINDS = [
  'onboarding',
  'preferences',
  'settings',
] as const satisfies readonly UserDataKind[]

// The largest document accepted, measured as compact JSON (UTF-8 bytes).
export const MAX_DOCUMENT_BYTES = 64 * 1024
// Nesting deeper than this is refused; MySQL's JSON type (the Laravel original's store) stops at 100 too.
export const MAX_DOCUMENT_DEPTH = 100

/**
 * Any JSON object. A record rather than an empty object schema: Ajv's `removeAdditional: 'all'`
 * would strip every member of the latter.
 */
export const UserDocument = Type.Record(Type.String(), Type.Unknown(), {
  description: `Any JSON object the app chooses, up to ${MAX_DOCUMENT_BYTES / 1024} KiB as compact JSON.`,
  examples: [{ completed_steps: ['profile', 'broker'], dismissed: false }],
})
