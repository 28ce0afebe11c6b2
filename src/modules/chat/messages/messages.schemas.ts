import type { Readable } from 'node:stream'
import { type Static, Type } from 'typebox'
import { IdParam, Message } from '../chat.schemas.ts'

export const MAX_BODY = 5000
export const MAX_ATTACHMENTS = 5
export const MAX_ATTACHMENT_BYTES = 10 * 1024 * 1024
export const DEFAULT_OLDER_LIMIT = 50

/** The fields of a new message, sent as JSON or as multipart form fields beside `attachments[]`. */
export const PostMessageBody = Type.Object({
  group_id: IdParam,
  body: Type.Optional(
    Type.Union([Type.String({ maxLength: MAX_BODY }), Type.Null()], {
      description: `Up to ${MAX_BODY} characters; required unless files are attached.`,
    }),
  ),
  ask_ai: Type.Optional(
    Type.Boolean({
      description:
        'Ask the AI to analyse the message (text and images): answered later in the group as an assistant message; listed in GET /api/analysis.',
    }),
  ),
})
export type PostMessageBody = Static<typeof PostMessageBody>

/** The same fields as a multipart form, with the files; for the OpenAPI document (the handler reads the stream). */
export const PostMessageForm = Type.Object({
  ...PostMessageBody.properties,
  attachments: Type.Optional(
    Type.Array(Type.String({ contentMediaType: 'application/octet-stream' }), {
      maxItems: MAX_ATTACHMENTS,
      description: `Sent as attachments[]: up to ${MAX_ATTACHMENTS} PNG, JPEG, GIF, WebP or PDF files of at most 10 MiB each, judged by their bytes.`,
    }),
  ),
})

/** The route's body by content type: JSON, or a multipart form that may carry files. */
export const PostMessageContent = {
  content: {
    'application/json': { schema: PostMessageBody },
    'multipart/form-data': { schema: PostMessageForm },
  },
}

export const MessageParams = Type.Object({ message: IdParam })
export type MessageParams = Static<typeof MessageParams>
export const AttachmentParams = Type.Object({ message: IdParam, attachment: IdParam })
export type AttachmentParams = Static<typeof AttachmentParams>

export const OlderQuery = Type.Object({
  limit: Type.Optional(
    Type.Integer({ minimum: 1, maximum: 100, description: `Default ${DEFAULT_OLDER_LIMIT}.` }),
  ),
})
export type OlderQuery = Static<typeof OlderQuery>

export const OlderResponse = Type.Object({
  data: Type.Array(Message, { description: 'Older messages, oldest first.' }),
  has_more: Type.Boolean(),
})
export type OlderResponse = Static<typeof OlderResponse>

export const AttachmentFile = Type.Unsafe<Readable>({
  type: 'string',
  contentMediaType: 'application/octet-stream',
  description: 'The file as it was uploaded: PNG, JPEG, GIF, WebP (inline) or PDF (a download).',
})
