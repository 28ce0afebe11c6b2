import multipart from '@fastify/multipart'
import type { TypeBoxTypeProvider } from '@fastify/type-provider-typebox'
import type { FastifyInstance, FastifyRequest } from 'fastify'
import { ValidationError } from '../../../lib/errors.ts'
import { commonErrorResponses, MessageResponse as DeletedResponse } from '../../../lib/http-schemas.ts'
import { type FormShape, readMultipartForm, textWhereFilesGo } from '../../../lib/multipart.ts'
import { compileBodyValidator } from '../../../lib/request-validators.ts'
import type { FileStorage } from '../../../lib/storage/storage.ts'
import type { FieldErrors } from '../../../lib/validation.ts'
import { signedInUser, type ThrottleRule } from '../../../plugins/guards.ts'
import { MessageResponse } from '../chat.schemas.ts'
import { isDownloadOnly, type StoredUpload, storeUpload } from './attachments.ts'
import {
  AttachmentFile,
  AttachmentParams,
  DEFAULT_OLDER_LIMIT,
  MAX_ATTACHMENT_BYTES,
  MAX_ATTACHMENTS,
  MAX_BODY,
  MessageParams,
  OlderQuery,
  OlderResponse,
  PostMessageBody,
  PostMessageContent,
} from './messages.schemas.ts'
import type { MessagesService, NewMessageInput } from './messages.service.ts'

const tags = ['chat']
const config = { auth: 'session' } as const

const postThrottle: ThrottleRule = {
  name: 'chat-messages',
  max: 60,
  decaySeconds: 60,
  key: (request) => String(request.user?.id),
}

// Busboy stops a file at the size limit (and flags it), so an oversized file is never stored whole.
// More files than a message takes are read and dropped, up to `files`; past that the request is refused.
const multipartLimits = {
  fileSize: MAX_ATTACHMENT_BYTES,
  files: 4 * MAX_ATTACHMENTS,
  fields: 20,
  fieldSize: 8 * MAX_BODY,
  parts: 40,
}
const messageForm: FormShape = {
  isFile: (name) => /^attachments(\[\d*\])?$/.test(name),
  text: Object.keys(PostMessageBody.properties),
}
const checkFields = compileBodyValidator(PostMessageBody)

/** The message the request describes: JSON, or a multipart form whose files are streamed into storage. */
async function readMessage(request: FastifyRequest, storage: FileStorage): Promise<NewMessageInput> {
  const uploads: StoredUpload[] = []
  let tooManyFiles = false
  let fields: Record<string, unknown>
  try {
    let errors: FieldErrors = {}
    if (request.isMultipart()) {
      fields = await readMultipartForm(request, messageForm, async (part) => {
        if (uploads.length < MAX_ATTACHMENTS)
          uploads.push(await storeUpload(storage, part.file, part.filename))
        else {
          tooManyFiles = true
          part.file.resume()
        }
      })
    } else {
      fields = request.body as Record<string, unknown>
      // A JSON or form body cannot carry a file: a value named as one is refused, not dropped.
      errors = textWhereFilesGo(fields, messageForm)
    }
    errors = { ...errors, ...checkFields(fields) }
    if (Object.keys(errors).length > 0) throw new ValidationError(errors)
  } catch (error) {
    // Nothing of a refused request stays in storage.
    await Promise.all(uploads.map((upload) => storage.delete(upload.path).catch(() => {})))
    throw error
  }
  const input = fields as PostMessageBody
  return {
    groupId: input.group_id,
    body: input.body ?? '',
    uploads,
    tooManyFiles,
    askAi: input.ask_ai === true,
  }
}

/** `Content-Disposition` for a stored name: an ASCII fallback plus the exact name (RFC 6266). */
function disposition(kind: 'inline' | 'attachment', name: string): string {
  const ascii = name.replace(/[^\x20-\x7e]/g, '_').replace(/["\\]/g, '_')
  return `${kind}; filename="${ascii}"; filename*=UTF-8''${encodeURIComponent(name)}`
}

/** Messages: post (with attachments), page back, delete, and download an attachment. */
export default async function messagesRoutes(
  fastify: FastifyInstance,
  { messages }: { messages: MessagesService },
) {
  const app = fastify.withTypeProvider<TypeBoxTypeProvider>()
  // Only in this plugin: the message route is the one here that takes files.
  await app.register(multipart, { limits: multipartLimits, throwFileSizeLimit: false })

  app.post(
    '/api/message',
    {
      config: { ...config, throttle: postThrottle },
      schema: {
        tags,
        summary:
          'Write to a group (JSON, or multipart with up to 5 files as attachments[]); emits SocketMessage',
        description:
          'Multipart forms carry the same fields plus `attachments[]`: up to 5 files of at most 10 MiB each, ' +
          'PNG, JPEG, GIF, WebP or PDF judged by their bytes. 60 messages a minute per user.',
        body: PostMessageContent,
        response: { 201: MessageResponse, ...commonErrorResponses },
      },
      // readMessage checks JSON and multipart fields alike, with this same schema.
      validatorCompiler: () => () => true,
    },
    async (request, reply) => {
      const message = await messages.post(signedInUser(request), await readMessage(request, app.storage))
      return reply.code(201).send({ data: message })
    },
  )

  app.get(
    '/api/message/older/:message',
    {
      config,
      schema: {
        tags,
        summary: 'Messages before this one in its group, oldest first (keyset paging)',
        params: MessageParams,
        querystring: OlderQuery,
        response: { 200: OlderResponse, ...commonErrorResponses },
      },
    },
    async (request) =>
      messages.older(
        signedInUser(request),
        request.params.message,
        request.query.limit ?? DEFAULT_OLDER_LIMIT,
      ),
  )

  app.delete(
    '/api/message/:message',
    {
      config,
      schema: {
        tags,
        summary:
          'Delete a message and its files (its author, the group owner or a site admin); emits MessageDeleted',
        params: MessageParams,
        response: { 200: DeletedResponse, ...commonErrorResponses },
      },
    },
    async (request) => {
      await messages.delete(signedInUser(request), request.params.message)
      return { message: 'The message has been deleted.' }
    },
  )

  app.get(
    '/api/message/:message/attachments/:attachment',
    {
      config,
      schema: {
        tags,
        summary: 'Download an attachment (members of the group only)',
        params: AttachmentParams,
        produces: ['image/png', 'image/jpeg', 'image/gif', 'image/webp', 'application/pdf'],
        response: { 200: AttachmentFile, '4xx': DeletedResponse },
      },
    },
    async (request, reply) => {
      const { message, attachment } = request.params
      const file = await messages.openAttachment(signedInUser(request), message, attachment)
      return reply
        .header('content-type', file.mimeType)
        .header('content-length', file.size)
        .header(
          'content-disposition',
          disposition(isDownloadOnly(file.mimeType) ? 'attachment' : 'inline', file.name),
        )
        .header('content-security-policy', "default-src 'none'; sandbox")
        .header('cache-control', 'private, max-age=3600')
        .send(file.stream)
    },
  )
}
