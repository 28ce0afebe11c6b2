import { DrizzleQueryError } from 'drizzle-orm/errors'
import { describe, expect, it } from 'vitest'
import { databaseFailureOf, fromDatabase, GIVEN_UP } from './failures.ts'

const withCode = (code: string, message = 'failed') =>
  fromDatabase(Object.assign(new Error(message), { code }))

describe('databaseFailureOf', () => {
  it('names the server or connection failures unavailable, through the Drizzle error that wraps them', () => {
    for (const error of [
      withCode('ECONNREFUSED', 'connect ECONNREFUSED 127.0.0.1:5432'),
      withCode('57P01', 'terminating connection due to administrator command'),
      withCode('57P03', 'the database system is starting up'),
      withCode('53300', 'sorry, too many clients already'),
      withCode('08006'),
      fromDatabase(new Error('timeout exceeded when trying to connect')),
      fromDatabase(new Error('Connection terminated unexpectedly')),
    ]) {
      expect(databaseFailureOf(error)).toBe('unavailable')
      expect(databaseFailureOf(new DrizzleQueryError('select 1', [], error))).toBe('unavailable')
    }
  })

  it('names statement, lock and request time-outs timed-out', () => {
    expect(databaseFailureOf(withCode('57014', 'canceling statement due to statement timeout'))).toBe(
      'timed-out',
    )
    expect(databaseFailureOf(withCode('55P03', 'canceling statement due to lock timeout'))).toBe('timed-out')
    expect(databaseFailureOf(fromDatabase(new Error('Query read timeout')))).toBe('timed-out')
    expect(databaseFailureOf(new DrizzleQueryError('commit', [], withCode(GIVEN_UP)))).toBe('timed-out')
  })

  it("leaves the request's own failures (a constraint, a bug) to the caller", () => {
    expect(databaseFailureOf(withCode('23505', 'duplicate key value'))).toBeUndefined()
    expect(databaseFailureOf(new DrizzleQueryError('insert', [], withCode('23503')))).toBeUndefined()
    expect(databaseFailureOf(new TypeError('x is undefined'))).toBeUndefined()
    expect(databaseFailureOf('not an error')).toBeUndefined()
    // The same network failure from elsewhere (S3, SMTP, the upstream) is not the database's.
    expect(
      databaseFailureOf(Object.assign(new Error('connect ECONNREFUSED'), { code: 'ECONNREFUSED' })),
    ).toBeUndefined()
  })
})
