import type { Db } from '../../db/client.ts'
import type { UserRow } from '../../db/schema/index.ts'
import type { Clock } from '../../lib/clock.ts'
import { ValidationError } from '../../lib/errors.ts'
import { hashPassword, verifyDecoyPassword, verifyPassword } from '../../lib/passwords.ts'
import { createUsersRepository } from './users.repository.ts'

export interface NewUser {
  name: string
  email: string
  password: string
  isAdmin?: boolean
  verified?: boolean
}

export function createUsersService({ db, clock }: { db: Db; clock: Clock }) {
  const repo = createUsersRepository({ db })
  return {
    findById: (id: number) => repo.findById(id),

    /** Creates a user with an argon2id hash; a taken email (any case) is a 422 on `email`. */
    async create(input: NewUser): Promise<UserRow> {
      const email = input.email.trim().toLowerCase()
      const taken = () => ValidationError.withMessages({ email: ['The email has already been taken.'] })
      if (await repo.findByEmail(email)) throw taken()
      const now = clock.now()
      const row = await repo.insert({
        name: input.name.trim(),
        email,
        password: await hashPassword(input.password),
        isAdmin: input.isAdmin ?? false,
        emailVerifiedAt: input.verified ? now : null,
        createdAt: now,
        updatedAt: now,
      })
      // Two registrations racing for one email: the unique index decides, the loser gets the same 422.
      if (!row) throw taken()
      return row
    },

    /**
     * The user whose email and password these are, or undefined; an unknown email takes as long as a
     * wrong password. A bcrypt hash from the Laravel original is replaced by argon2id on success.
     */
    async verifyCredentials(email: string, password: string): Promise<UserRow | undefined> {
      const user = await repo.findByEmail(email.trim())
      if (!user) {
        await verifyDecoyPassword(password)
        return undefined
      }
      const { valid, needsRehash } = await verifyPassword(user.password, password)
      if (!valid) return undefined
      if (needsRehash) await repo.updatePasswordHash(user.id, await hashPassword(password), clock.now())
      return user
    },
  }
}

export type UsersService = ReturnType<typeof createUsersService>
