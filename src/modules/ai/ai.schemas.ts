import { type Static, Type } from 'typebox'
import { Attachment, ChatUser } from '../chat/chat.schemas.ts'

export const MAX_CHAT_MESSAGES = 50
export const MAX_CHAT_TEXT_BYTES = 32 * 1024

export const AGENTS = ['support', 'trading', 'assistant'] as const
export type AgentName = (typeof AGENTS)[number]

/**
 * A part of a UI message as `useChat` sends it. Only text parts reach the model; the rest (step
 * markers, tool parts of earlier answers, files) are accepted and left out, so a client cannot hand
 * the model tool results it made up.
 */
const UiPart = Type.Object(
  {
    type: Type.String({ minLength: 1, maxLength: 64 }),
    text: Type.Optional(Type.String()),
  },
  { additionalProperties: true },
)

const UiMessage = Type.Object(
  {
    id: Type.Optional(Type.String({ maxLength: 191 })),
    role: Type.Union([Type.Literal('user'), Type.Literal('assistant')], {
      description: 'Only user and assistant messages are accepted.',
    }),
    parts: Type.Array(UiPart, { maxItems: 200 }),
  },
  { additionalProperties: true },
)

/** `useChat`'s request body (DefaultChatTransport): the chat id, its UI messages, what triggered it. */
export const AgentBody = Type.Object(
  {
    id: Type.Optional(Type.String({ maxLength: 191 })),
    messages: Type.Array(UiMessage, { minItems: 1, maxItems: MAX_CHAT_MESSAGES }),
    trigger: Type.Optional(Type.Union([Type.Literal('submit-message'), Type.Literal('regenerate-message')])),
    messageId: Type.Optional(Type.String({ maxLength: 191 })),
  },
  { additionalProperties: true },
)
export type AgentBody = Static<typeof AgentBody>

export const AgentStream = Type.Unsafe<string>({
  type: 'string',
  contentMediaType: 'text/event-stream',
  description:
    'The AI SDK UI message stream v1 as server-sent events: `data: {chunk}` lines, ending with `data: [DONE]`.',
})

export const AnalysisQuery = Type.Object({
  per_page: Type.Optional(Type.Integer({ minimum: 1, maximum: 50, description: 'Default 15.' })),
  page: Type.Optional(Type.Integer({ minimum: 1, maximum: 10_000_000, description: 'Default 1.' })),
})
export type AnalysisQuery = Static<typeof AnalysisQuery>

/** One chat analysis: the question asked with `ask_ai`, and the assistant's answer once there is one. */
export const AnalysisEntry = Type.Object({
  id: Type.Integer(),
  status: Type.Union([Type.Literal('pending'), Type.Literal('completed'), Type.Literal('failed')]),
  group: Type.Object({ id: Type.Integer(), name: Type.String() }),
  question: Type.Object({
    message_id: Type.Integer(),
    body: Type.String(),
    author: Type.Union([Type.Pick(ChatUser, ['id', 'name']), Type.Null()], {
      description: 'Null once the author deleted their account.',
    }),
    attachments: Type.Array(Attachment),
  }),
  answer: Type.Union([Type.Object({ message_id: Type.Integer(), body: Type.String() }), Type.Null()]),
  model: Type.String(),
  created_at: Type.String(),
  completed_at: Type.Union([Type.String(), Type.Null()]),
})
export type AnalysisEntry = Static<typeof AnalysisEntry>
