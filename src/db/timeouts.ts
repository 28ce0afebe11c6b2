/** How long PostgreSQL may take, in ms (config.ts reads them from DATABASE_*_TIMEOUT_MS). */
export interface DatabaseTimeouts {
  /** One statement (PostgreSQL's statement_timeout); also what a transaction may sit idle. */
  readonly statementMs: number
  /** Waiting for a row or table lock (lock_timeout): a lock held for long fails fast, not at the statement's end. */
  readonly lockMs: number
  /** Waiting for a connection of the pool, when every one is busy or PostgreSQL does not answer. */
  readonly poolWaitMs: number
  /** Instead of `statementMs` and `lockMs` for migrations and the CLI's commands, which may rightly take long. */
  readonly longStatementMs: number
}

// A request's statements take milliseconds; seconds mean a lock or an outage, which the app should
// hear of (503, retry) well before nginx gives up on the request at 30 s.
export const DEFAULT_DATABASE_TIMEOUTS: DatabaseTimeouts = Object.freeze({
  statementMs: 5_000,
  lockMs: 3_000,
  poolWaitMs: 3_000,
  longStatementMs: 600_000,
})
