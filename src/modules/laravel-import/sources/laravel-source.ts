import { toBoolean, toDate, toId, toInteger, toOptionalId, toText } from './source-values.ts'

/** A row of the original's `users` table, read the same from every driver. */
export interface LaravelUser {
  id: number
  name: string | null
  email: string | null
  password: string | null
  rememberToken: string | null
  emailVerifiedAt: Date | null
  isAdmin: boolean
  /** Fortify's `encrypt($secret)`. */
  twoFactorSecret: string | null
  /** Fortify's `encrypt(json_encode($codes))`. */
  twoFactorRecoveryCodes: string | null
  twoFactorConfirmedAt: Date | null
  /** Jetstream's path on the `public` disk, e.g. `profile-photos/<name>.png`. */
  profilePhotoPath: string | null
  createdAt: Date | null
  updatedAt: Date | null
}

/** A row of the database session driver's `sessions` table. */
export interface LaravelSession {
  id: string
  userId: number | null
  ipAddress: string | null
  userAgent: string | null
  /** base64 of the serialized attributes (see lib/laravel-compat/session-payload.ts). */
  payload: string
  lastActivity: number
}

/**
 * The optional parts of a Laravel schema this source has: Fortify's two-factor columns (and the
 * later `two_factor_confirmed_at`), Jetstream's photo, the app's `is_admin`, the database session
 * driver's table. A column that is not there reads as empty.
 */
export interface LaravelSchema {
  twoFactor: boolean
  twoFactorConfirmation: boolean
  profilePhoto: boolean
  isAdmin: boolean
  sessions: boolean
}

/** The original's database, read in batches keyed by id so memory stays flat however many rows. */
export interface LaravelSource {
  /** What and where it is, without credentials (`MySQL at db:3306/app`). */
  readonly label: string
  schema(): Promise<LaravelSchema>
  countUsers(): Promise<number>
  /** Up to `limit` users with an id above `afterId`, by id. */
  users(afterId: number, limit: number): Promise<LaravelUser[]>
  /** Which of these ids are users of the source. */
  existingUserIds(ids: number[]): Promise<Set<number>>
  /** Emails held by more than one user, case aside (lower-cased), each with the lowest id holding it. */
  sharedEmails(): Promise<Map<string, number>>
  /** Sessions active at `activeSince` (unix seconds) or later, and those idle for longer. */
  countSessions(activeSince: number): Promise<{ live: number; expired: number }>
  /** Up to `limit` sessions active since `activeSince`, with an id above `afterId`, by id. */
  sessions(afterId: string, activeSince: number, limit: number): Promise<LaravelSession[]>
  close(): Promise<void>
}

/** One database driver under a source: plain queries with `?` placeholders. */
export interface SqlDriver {
  readonly label: string
  all(query: string, params: unknown[]): Promise<Record<string, unknown>[]>
  /** The table's columns, lower-cased; empty when there is no such table. */
  columns(table: string): Promise<Set<string>>
  close(): Promise<void>
}

/** The source's schema does not hold what the import needs; nothing was read or written. */
export class LaravelSchemaError extends Error {
  constructor(message: string) {
    super(message)
    this.name = 'LaravelSchemaError'
  }
}

const REQUIRED_USER_COLUMNS = ['id', 'name', 'email', 'password']
const OPTIONAL_USER_COLUMNS = [
  'remember_token',
  'email_verified_at',
  'is_admin',
  'two_factor_secret',
  'two_factor_recovery_codes',
  'two_factor_confirmed_at',
  'profile_photo_path',
  'created_at',
  'updated_at',
]
const SESSION_COLUMNS = ['id', 'user_id', 'ip_address', 'user_agent', 'payload', 'last_activity']

function userOf(row: Record<string, unknown>): LaravelUser {
  return {
    id: toId(row.id),
    name: toText(row.name),
    email: toText(row.email),
    password: toText(row.password),
    rememberToken: toText(row.remember_token),
    emailVerifiedAt: toDate(row.email_verified_at),
    isAdmin: toBoolean(row.is_admin),
    twoFactorSecret: toText(row.two_factor_secret),
    twoFactorRecoveryCodes: toText(row.two_factor_recovery_codes),
    twoFactorConfirmedAt: toDate(row.two_factor_confirmed_at),
    profilePhotoPath: toText(row.profile_photo_path),
    createdAt: toDate(row.created_at),
    updatedAt: toDate(row.updated_at),
  }
}

function sessionOf(row: Record<string, unknown>): LaravelSession {
  return {
    id: toText(row.id) ?? '',
    userId: toOptionalId(row.user_id),
    ipAddress: toText(row.ip_address),
    userAgent: toText(row.user_agent),
    payload: toText(row.payload) ?? '',
    lastActivity: toInteger(row.last_activity) ?? 0,
  }
}

/** A LaravelSource over a driver: the same SQL for MySQL/MariaDB, PostgreSQL and SQLite. */
export function createLaravelSource(driver: SqlDriver): LaravelSource {
  let userColumns: string | undefined

  async function selectedUserColumns(): Promise<string> {
    if (userColumns) return userColumns
    const present = await driver.columns('users')
    if (present.size === 0) throw new LaravelSchemaError(`${driver.label} has no users table.`)
    const missing = REQUIRED_USER_COLUMNS.filter((column) => !present.has(column))
    if (missing.length > 0) {
      throw new LaravelSchemaError(`The users table of ${driver.label} has no ${missing.join(', ')} column.`)
    }
    userColumns = [...REQUIRED_USER_COLUMNS, ...OPTIONAL_USER_COLUMNS.filter((c) => present.has(c))].join(
      ', ',
    )
    return userColumns
  }

  return {
    label: driver.label,

    async schema() {
      await selectedUserColumns()
      const users = await driver.columns('users')
      const sessions = await driver.columns('sessions')
      return {
        twoFactor: users.has('two_factor_secret'),
        twoFactorConfirmation: users.has('two_factor_confirmed_at'),
        profilePhoto: users.has('profile_photo_path'),
        isAdmin: users.has('is_admin'),
        sessions: SESSION_COLUMNS.every((column) => sessions.has(column)),
      }
    },

    async countUsers() {
      const [row] = await driver.all('select count(*) as n from users', [])
      return toInteger(row?.n) ?? 0
    },

    async users(afterId, limit) {
      const columns = await selectedUserColumns()
      const rows = await driver.all(`select ${columns} from users where id > ? order by id limit ?`, [
        afterId,
        limit,
      ])
      return rows.map(userOf)
    },

    async existingUserIds(ids) {
      if (ids.length === 0) return new Set()
      const marks = ids.map(() => '?').join(', ')
      const rows = await driver.all(`select id from users where id in (${marks})`, ids)
      return new Set(rows.map((row) => toId(row.id)))
    },

    async sharedEmails() {
      const rows = await driver.all(
        'select lower(email) as email, min(id) as id from users group by lower(email) having count(*) > 1',
        [],
      )
      return new Map(rows.map((row) => [toText(row.email) ?? '', toId(row.id)]))
    },

    async countSessions(activeSince) {
      const [row] = await driver.all(
        'select sum(case when last_activity >= ? then 1 else 0 end) as live, ' +
          'sum(case when last_activity < ? then 1 else 0 end) as expired from sessions',
        [activeSince, activeSince],
      )
      return { live: toInteger(row?.live) ?? 0, expired: toInteger(row?.expired) ?? 0 }
    },

    async sessions(afterId, activeSince, limit) {
      const rows = await driver.all(
        `select ${SESSION_COLUMNS.join(', ')} from sessions where last_activity >= ? and id > ? order by id limit ?`,
        [activeSince, afterId, limit],
      )
      return rows.map(sessionOf)
    },

    close: () => driver.close(),
  }
}
