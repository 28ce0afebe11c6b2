import type { Db } from '../../db/client.ts'
import type { UserDataKind } from '../../db/schema/index.ts'
import type { Clock } from '../../lib/clock.ts'
import { ValidationError } from '../../lib/errors.ts'
import { jsonBytes, unstorableJson } from '../../lib/json-document.ts'
import { createUserDataRepository } from './user-data.repository.ts'
import { MAX_DOCUMENT_BYTES, MAX_DOCUMENT_DEPTH } from './user-data.schemas.ts'

type Document = Record<string, unknown>

const invalid = (message: string) => ValidationError.withMessages({ body: [`The body field ${message}`] })

/** The app's free-form per-user documents (onboarding, preferences, settings), one of each per user. */
export function createUserDataService({ db, clock }: { db: Db; clock: Clock }) {
  const repo = createUserDataRepository({ db })
  return {
    /** The user's document of this kind; `{}` until the first save. */
    async get(userId: number, kind: UserDataKind): Promise<Document> {
      return (await repo.find(userId, kind)) ?? {}
    },

    /** Replaces the user's document of this kind; too large or unstorable documents are a 422 on `body`. */
    async replace(userId: number, kind: UserDataKind, input: Document): Promise<Document> {
      // `_token` is the CSRF field of a form post, not part of the document.
      const { _token, ...document } = input
      const problem = unstorableJson(document, MAX_DOCUMENT_DEPTH)
      if (problem) throw invalid(problem)
      if (jsonBytes(document) > MAX_DOCUMENT_BYTES) {
        throw invalid(`must not be greater than ${MAX_DOCUMENT_BYTES / 1024} kilobytes.`)
      }
      return repo.replace(userId, kind, document, clock.now())
    },
  }
}
