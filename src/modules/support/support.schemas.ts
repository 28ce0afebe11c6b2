import { type Static, type TSchema, Type } from 'typebox'

// Limits of the three forms (the columns allow these; a message is long enough to act on).
export const MAX_SUBJECT = 255
export const MIN_MESSAGE = 10
export const MAX_MESSAGE = 5000
export const MAX_CATEGORY = 64
export const MAX_PAGE_URL = 2048
export const SEVERITIES = ['low', 'medium', 'high', 'critical'] as const

const Subject = Type.String({ minLength: 1, maxLength: MAX_SUBJECT, examples: ['Cannot connect my broker'] })
const Message = Type.String({
  minLength: MIN_MESSAGE,
  maxLength: MAX_MESSAGE,
  description: `${MIN_MESSAGE} to ${MAX_MESSAGE} characters.`,
})
const nullable = <T extends TSchema>(schema: T) => Type.Optional(Type.Union([schema, Type.Null()]))
const Category = nullable(
  Type.String({
    maxLength: MAX_CATEGORY,
    description: 'Free text, e.g. billing or broker.',
    examples: ['billing'],
  }),
)

export const ContactFormBody = Type.Object({
  name: Type.String({ minLength: 1, maxLength: 255 }),
  email: Type.String({ minLength: 1, maxLength: 255, format: 'email' }),
  subject: Subject,
  message: Message,
  website: Type.Optional(
    Type.String({ maxLength: 255, description: 'A honeypot: people leave it empty, bots fill it in.' }),
  ),
})
export type ContactFormBody = Static<typeof ContactFormBody>

export const SupportRequestBody = Type.Object({ subject: Subject, message: Message, category: Category })
export type SupportRequestBody = Static<typeof SupportRequestBody>

export const ReportIssueBody = Type.Object({
  subject: Subject,
  message: Message,
  category: Category,
  severity: nullable(Type.Enum([...SEVERITIES])),
  page_url: nullable(
    Type.String({
      maxLength: MAX_PAGE_URL,
      pattern: '^[Hh][Tt][Tt][Pp][Ss]?://[^\\s/?#]+[^\\s]*$',
      description: 'The http(s) address of the page where it happened.',
      examples: ['https://app.example.com/strategies/42'],
    }),
  ),
})
export type ReportIssueBody = Static<typeof ReportIssueBody>
