import { type Static, Type } from 'typebox'
import { ADMIN_AUDIT_ACTIONS } from '../../../db/schema/index.ts'

/** What an admin change's `reason` may be: 1..1000 characters. */
export const AuditReason = Type.String({
  minLength: 1,
  maxLength: 1000,
  description: 'Why the admin made the change; kept in the audit record.',
  examples: ['Goodwill for the outage on May 1'],
})

const Figures = Type.Record(Type.String(), Type.Unknown(), {
  description:
    'The changed fields as they were (before) and became (after). A password is only ever `{"changed": true}`.',
})

/** One audit record as the admin screens list it. */
export const AdminAuditRecordResponse = Type.Object({
  id: Type.Integer(),
  action: Type.Enum([...ADMIN_AUDIT_ACTIONS]),
  admin_id: Type.Integer({ description: 'The admin who made the change (their account may be gone since).' }),
  admin_email: Type.String({ description: "The admin's email address at the time." }),
  user_id: Type.Integer({ description: 'The user the change was about.' }),
  reason: Type.Union([Type.String(), Type.Null()]),
  before: Figures,
  after: Figures,
  ip_address: Type.Union([Type.String(), Type.Null()], { description: "The admin's client address." }),
  created_at: Type.String({ format: 'date-time' }),
})
export type AdminAuditRecordResponse = Static<typeof AdminAuditRecordResponse>
