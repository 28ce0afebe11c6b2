import type { TypeBoxTypeProvider } from '@fastify/type-provider-typebox'
import type { FastifyInstance } from 'fastify'
import { commonErrorResponses } from '../../lib/http-schemas.ts'
import { signedInUser } from '../../plugins/guards.ts'
import { MAX_DOCUMENT_BYTES, USER_DATA_KINDS, UserDocument } from './user-data.schemas.ts'

// Room above the 64 KiB document limit for whitespace and escapes in the raw body, which the
// service measures again as compact JSON; anything larger is refused (413) before it is parsed.
const BODY_LIMIT = 2 * MAX_DOCUMENT_BYTES

/** `GET`/`POST /api/user/{onboarding,preferences,settings}`: one JSON object of each kind per user. */
export default async function userDataRoutes(fastify: FastifyInstance) {
  const app = fastify.withTypeProvider<TypeBoxTypeProvider>()
  const documents = app.services.userData
  const tags = ['user data']

  for (const kind of USER_DATA_KINDS) {
    app.get(
      `/api/user/${kind}`,
      {
        config: { auth: 'session' },
        schema: {
          tags,
          summary: `The user's ${kind}`,
          response: { 200: UserDocument, ...commonErrorResponses },
        },
      },
      async (request) => documents.get(signedInUser(request).id, kind),
    )

    app.post(
      `/api/user/${kind}`,
      {
        bodyLimit: BODY_LIMIT,
        config: { auth: 'session' },
        schema: {
          tags,
          summary: `Replace the user's ${kind}`,
          body: UserDocument,
          response: { 200: UserDocument, ...commonErrorResponses },
        },
      },
      async (request) => documents.replace(signedInUser(request).id, kind, request.body),
    )
  }
}
