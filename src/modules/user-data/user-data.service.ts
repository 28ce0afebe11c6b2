import type { Db } from '../../db/client.ts'
import type { UserDataKind } from '../../db/schema/index.ts'
import type { Clock } from '../../lib/clock.ts'
import { ValidationError } from '../../lib/errors.ts'
import { createUserDataRepository } from './user-data.repository.ts'
import { MAX_DOCUMENT_BYTES, MAX_DOCUMENT_DEPTH } from './user-data.schemas.ts'

type Document = Record<string, unknown>

const invalid = (message: string) => ValidationError.withMessages({ body: [`The body field ${message}`] })

/**
 * What PostgreSQL's jsonb cannot hold, found without recursion (so a deep document cannot overflow
 * the stack): null bytes and unpaired surrogates in keys or strings, and nesting past the limit.
 * (The body plugin already refuses null bytes in string values, naming the field.)
 */
function unstorable(document: Document): string | null {
  const stack: Array<{ value: unknown; depth: number }> = [{ value: document, depth: 1 }]
  const badText = (text: string) => text.includes('\u0000') || !text.isWellFormed()
  while (stack.length > 0) {
    const { value, depth } = stack.pop() as { value: unknown; depth: number }
    if (typeof value === 'string') {
      if (badText(value)) return 'must not contain null bytes or unpaired surrogates.'
      continue
    }
    if (value === null || typeof value !== 'object') continue
    if (depth > MAX_DOCUMENT_DEPTH) return `must not be nested more than ${MAX_DOCUMENT_DEPTH} levels deep.`
    for (const [key, child] of Object.entries(value)) {
      if (badText(key)) return 'must not contain null bytes or unpaired surrogates.'
      stack.push({ value: child, depth: depth + 1 })
    }
  }
  return null
}

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
      const problem = unstorable(document)
      if (problem) throw invalid(problem)
      if (Buffer.byteLength(JSON.stringify(document)) > MAX_DOCUMENT_BYTES) {
        throw invalid(`must not be greater than ${MAX_DOCUMENT_BYTES / 1024} kilobytes.`)
      }
      return repo.replace(userId, kind, document, clock.now())
    },
  }
}
