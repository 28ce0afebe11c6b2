import { afterAll, beforeAll } from 'vitest'
import { buildTestApp, type TestApp, type TestAppOptions } from './build-test-app.ts'
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
 * The app a file's tests share (or a describe block's, when called inside one): built before them,
 * closed after. `options` as a function is read when the app is built, after the hooks registered
 * before it (a mail sink's) have run.
 */
export function appUnderTest(options: TestAppOptions | (() => TestAppOptions) = {}): TestApp {
  let app: TestApp | undefined
  beforeAll(async () => {
    app = await buildTestApp(typeof options === 'function' ? options() : options)
  })
  afterAll(async () => {
    await app?.close()
  })
  return standIn('the app under test', () => app)
}

/** An SMTP sink a file's tests share, started before them (call it before the app that sends to it) and stopped after. */
export function mailSinkUnderTest(): SmtpSink {
  let sink: SmtpSink | undefined
  beforeAll(async () => {
    sink = await new SmtpSink().start()
  })
  afterAll(async () => {
    await sink?.stop()
  })
  return standIn('the mail sink', () => sink)
}
