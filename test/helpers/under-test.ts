import { afterAll, beforeAll } from 'vitest'
import { buildTestApp, type TestApp, type TestAppOptions } from './build-test-app.ts'
import { FakeModel } from './fake-model.ts'
import { FakeStripe } from './fake-stripe.ts'
import { FakeUpstream } from './fake-upstream.ts'
import { SmtpSink } from './smtp-sink.ts'

/**
 * Stands for what `beforeAll` makes: reading it before then throws, and its methods run on the
 * real object.
 */
function standIn<T extends object>(what: string, current: () => T | undefined): T {
  return new Proxy({} as T, {
    get(_, key) {
      const real = current()
      if (!real) throw new Error(`${what} is made in beforeAll: use it in a test or a hook`)
      const value = Reflect.get(real, key)
      return typeof value === 'function' ? value.bind(real) : value
    },
  })
}

/**
 * What `start` makes, shared by a file's tests (or a describe block's, when called inside one): made
 * in beforeAll, ended in afterAll, and answered as a stand-in.
 */
function underTest<T extends object>(
  what: string,
  start: () => Promise<T>,
  end: (made: T) => Promise<void>,
): T {
  let made: T | undefined
  beforeAll(async () => {
    made = await start()
  })
  afterAll(async () => {
    if (made) await end(made)
  })
  return standIn(what, () => made)
}

/**
 * The app a file's tests share (or a describe block's, when called inside one): built before them,
 * closed after. `options` as a function is read when the app is built, after the hooks registered
 * before it (a mail sink's) have run.
 */
export function appUnderTest(options: TestAppOptions | (() => TestAppOptions) = {}): TestApp {
  return underTest(
    'the app under test',
    () => buildTestApp(typeof options === 'function' ? options() : options),
    (app) => app.close(),
  )
}

/** An SMTP sink a file's tests share, started before them (call it before the app that sends to it) and stopped after. */
export function mailSinkUnderTest(): SmtpSink {
  return underTest(
    'the mail sink',
    () => new SmtpSink().start(),
    (sink) => sink.stop(),
  )
}

/**
 * A fake upstream a file's tests share (or a describe block's), started before them (call it before
 * the app that calls it) and stopped after. A test may still stop and start it again.
 */
export function fakeUpstreamUnderTest(): FakeUpstream {
  return underTest(
    'the fake upstream',
    () => new FakeUpstream().start(),
    (fake) => fake.stop(),
  )
}

/** A fake model server a file's tests share (or a describe block's), started before them (call it before the app that asks it) and stopped after. */
export function fakeModelUnderTest(): FakeModel {
  return underTest(
    'the fake model',
    () => new FakeModel().start(),
    (model) => model.stop(),
  )
}

/** A fake Stripe API a file's tests share (or a describe block's), started before them (call it before the app that calls it) and stopped after. */
export function fakeStripeUnderTest(): FakeStripe {
  return underTest(
    'the fake Stripe',
    () => new FakeStripe().start(),
    (stripe) => stripe.stop(),
  )
}
