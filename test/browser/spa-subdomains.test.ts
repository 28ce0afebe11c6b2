/**
 * The example SPA (examples/spa, built with Vite) in Chromium, on the subdomain deployment
 * docs/connecting-the-app.md documents: the SPA on app.trading.test, the API on api.trading.test with
 * SESSION_DOMAIN=.trading.test, so the page reads the API's XSRF-TOKEN cookie. It signs in, keeps the
 * session over a reload, hears chat messages and order-status notifications over Echo, streams an
 * assistant answer, uploads a profile photo and signs out; "remember me" outlives the session. A
 * third host of the same site (evil.trading.test), which can read that cookie too, gets nothing done.
 */
import { existsSync, mkdtempSync, readFileSync, rmSync, statSync, writeFileSync } from 'node:fs'
import { createServer, type RequestListener, type Server } from 'node:http'
import { tmpdir } from 'node:os'
import { extname, join, resolve, sep } from 'node:path'
import { fileURLToPath } from 'node:url'
import { type Browser, type BrowserContext, chromium, type Page } from 'playwright-core'
import { build } from 'vite'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { buildTestApp, type TestApp } from '../helpers/build-test-app.ts'
import { createGroup, joinGroup } from '../helpers/chat.ts'
import { CHROMIUM, CHROMIUM_ARGS, requireChromium } from '../helpers/chromium.ts'
import { TestClient } from '../helpers/client.ts'
import { minutes } from '../helpers/clock.ts'
import { createUser, grantCredits } from '../helpers/factories.ts'
import { freePort } from '../helpers/ports.ts'

const SPA_ROOT = fileURLToPath(new URL('../../examples/spa', import.meta.url))
const SITE = 'trading.test'
const HOSTS = { app: `app.${SITE}`, api: `api.${SITE}`, evil: `evil.${SITE}` }
const BROWSER_ARGS = [
  ...CHROMIUM_ARGS,
  // The three host names resolve to this machine; each server keeps its own port.
  `--host-resolver-rules=${Object.values(HOSTS)
    .map((host) => `MAP ${host} 127.0.0.1`)
    .join(', ')}`,
]
const PNG = Buffer.from(
  'iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAQAAAC1HAwCAAAAC0lEQVR42mNkYAAAAAYAAjCB0C8AAAAASUVORK5CYII=',
  'base64',
)

const CONTENT_TYPES: Record<string, string> = {
  '.html': 'text/html; charset=utf-8',
  '.js': 'text/javascript; charset=utf-8',
  '.css': 'text/css; charset=utf-8',
}

/** The built SPA, as any static host serves it. */
function staticFiles(dir: string): RequestListener {
  return (req, res) => {
    const path = new URL(req.url ?? '/', 'http://static.invalid').pathname
    const file = resolve(dir, `.${path === '/' ? '/index.html' : decodeURIComponent(path)}`)
    if (!file.startsWith(dir + sep) || !existsSync(file) || !statSync(file).isFile()) {
      res.writeHead(404).end()
      return
    }
    res.writeHead(200, {
      'content-type': CONTENT_TYPES[extname(file)] ?? 'application/octet-stream',
      'cache-control': 'no-store',
    })
    res.end(readFileSync(file))
  }
}

/**
 * A page of a sibling host: it reads the parent-domain XSRF-TOKEN cookie and puts it in the `_token`
 * field of two plain HTML forms aimed at the API (a logout, and a message in the victim's group).
 */
function evilPage(api: string, groupId: number): RequestListener {
  const page = `<!doctype html>
<html><head><meta charset="utf-8"><title>Free credits</title></head>
<body>
<form id="logout" method="post" action="${api}/api/logout"><input type="hidden" name="_token"></form>
<form id="message" method="post" action="${api}/api/message">
  <input type="hidden" name="_token">
  <input type="hidden" name="group_id" value="${groupId}">
  <input type="hidden" name="body" value="posted by evil.${SITE}">
</form>
<script>
  const pair = document.cookie.split('; ').find((c) => c.startsWith('XSRF-TOKEN='))
  window.stolenToken = pair ? decodeURIComponent(pair.slice('XSRF-TOKEN='.length)) : ''
  for (const field of document.querySelectorAll('[name=_token]')) field.value = window.stolenToken
</script>
</body></html>`
  return (_req, res) => {
    res.writeHead(200, { 'content-type': 'text/html; charset=utf-8' })
    res.end(page)
  }
}

async function listen(port: number, handler: RequestListener): Promise<Server> {
  const server = createServer(handler)
  await new Promise<void>((resolveListen, reject) => {
    server.once('error', reject)
    server.listen(port, '127.0.0.1', () => resolveListen())
  })
  return server
}

const closeServer = (server: Server) =>
  new Promise<void>((resolveClose) => {
    server.closeAllConnections()
    server.close(() => resolveClose())
  })

interface Status {
  state: string | undefined
  text: string
}

describe('the example SPA on app.trading.test against the API on api.trading.test (Chromium)', () => {
  let t: TestApp
  let api: string
  let spa: string
  let evil: string
  let browser: Browser
  const servers: Server[] = []
  const tempDirs: string[] = []
  const consoleLogs: string[] = []
  let groupId: number
  let ada: Awaited<ReturnType<typeof createUser>>
  let bob: Awaited<ReturnType<typeof createUser>>
  let adaContext: BrowserContext
  let adaPage: Page
  let bobContext: BrowserContext
  let bobPage: Page

  beforeAll(async () => {
    requireChromium()
    const [apiPort, spaPort, evilPort] = await Promise.all([freePort(), freePort(), freePort()])
    api = `http://${HOSTS.api}:${apiPort}`
    spa = `http://${HOSTS.app}:${spaPort}`
    evil = `http://${HOSTS.evil}:${evilPort}`
    t = await buildTestApp({
      port: apiPort,
      env: { APP_URL: api, FRONTEND_URL: spa, SESSION_DOMAIN: `.${SITE}` },
    })

    // Built as a deployment builds it: the VITE_* settings from a .env file (here a temporary one).
    const envDir = mkdtempSync(join(tmpdir(), 'spa-env-'))
    const outDir = mkdtempSync(join(tmpdir(), 'spa-dist-'))
    tempDirs.push(envDir, outDir)
    const url = new URL(api)
    writeFileSync(
      join(envDir, '.env'),
      [
        `VITE_API_URL=${api}`,
        `VITE_REVERB_APP_KEY=${t.config.realtime.key}`,
        `VITE_REVERB_HOST=${url.hostname}`,
        `VITE_REVERB_PORT=${url.port}`,
        'VITE_REVERB_SCHEME=http',
      ].join('\n'),
    )
    await build({
      root: SPA_ROOT,
      envDir,
      configFile: false,
      logLevel: 'silent',
      build: { outDir, emptyOutDir: true },
    })

    servers.push(await listen(spaPort, staticFiles(outDir)))

    ada = await createUser(t.database.db, { name: 'Ada Lovelace' })
    bob = await createUser(t.database.db, { name: 'Bob Builder' })
    await grantCredits(t.database.db, ada.user.id, 10)
    // The group, made through the API as the app would (from the SPA's origin).
    const adaClient = await apiClientFor(ada)
    groupId = (await createGroup(adaClient, { name: 'Subdomain traders' })).id
    await joinGroup(await apiClientFor(bob), groupId)
    servers.push(await listen(evilPort, evilPage(api, groupId)))

    browser = await chromium.launch({ executablePath: CHROMIUM, headless: true, args: BROWSER_ARGS })
  })

  afterAll(async () => {
    // Each step on its own, so one failing still lets the others run.
    await browser?.close().catch(() => {})
    await Promise.allSettled(servers.map(closeServer))
    for (const dir of tempDirs) rmSync(dir, { recursive: true, force: true })
    await t?.close()
  })

  /** A client of the API signed in as `who`, sending the SPA's Origin. */
  async function apiClientFor(who: { user: { email: string }; password: string }): Promise<TestClient> {
    const client = new TestClient(t.baseUrl, spa)
    const res = await client.post('/api/login', { email: who.user.email, password: who.password })
    if (res.status !== 200) throw new Error(`login answered ${res.status} ${res.text}`)
    return client
  }

  /** A new page of `context` on the SPA, once it has asked GET /api/user. */
  async function openSpa(context: BrowserContext): Promise<Page> {
    const page = await context.newPage()
    page.on('console', (message) => consoleLogs.push(`${message.type()}: ${message.text()}`))
    page.on('pageerror', (error) => consoleLogs.push(`pageerror: ${error.message}`))
    await page.goto(spa)
    await settled(page, 'session-status')
    return page
  }

  /** Waits for the status line `id` to report `done` or `error`, and answers it. */
  async function settled(page: Page, id: string): Promise<Status> {
    const line = page.locator(`#${id}`)
    try {
      await page.waitForSelector(`#${id}[data-state=done], #${id}[data-state=error]`, {
        state: 'attached',
        timeout: 15_000,
      })
    } catch (error) {
      throw new Error(`#${id} never settled; console:\n${consoleLogs.join('\n')}`, { cause: error })
    }
    return {
      state: (await line.getAttribute('data-state')) ?? undefined,
      text: (await line.textContent()) ?? '',
    }
  }

  /**
   * Runs `action` (a click, a submit), then waits for the status line `id` to report it done. The
   * page's handler marks the line busy as the event is dispatched, before `action` resolves.
   */
  async function expectDone(page: Page, id: string, action: () => Promise<void>): Promise<string> {
    await action()
    const status = await settled(page, id)
    expect(status.state, `#${id}: ${status.text}`).toBe('done')
    return status.text
  }

  const listed = (page: Page, id: string) => page.locator(`#${id} li`).allTextContents()

  async function signIn(
    page: Page,
    who: { user: { email: string }; password: string },
    options: { remember?: boolean } = {},
  ): Promise<void> {
    await page.fill('#email', who.user.email)
    await page.fill('#password', who.password)
    await page.setChecked('#remember', options.remember ?? false)
    await expectDone(page, 'login-status', () => page.click('#login-form button[type=submit]'))
  }

  /** A fresh browser profile (its own cookies) signed in through the SPA's form. */
  async function signedInPage(
    who: { user: { email: string }; password: string },
    options: { remember?: boolean } = {},
  ): Promise<{ context: BrowserContext; page: Page }> {
    const context = await browser.newContext()
    const page = await openSpa(context)
    await signIn(page, who, options)
    return { context, page }
  }

  const shownEmail = (page: Page) => page.textContent('#user-email')
  const loginFormShown = (page: Page) => page.isVisible('#login-form')

  async function reloadSpa(page: Page): Promise<Status> {
    await page.reload()
    return settled(page, 'session-status')
  }

  it('signs in through the form; the session and XSRF cookies belong to .trading.test', async () => {
    adaContext = await browser.newContext()
    adaPage = await openSpa(adaContext)
    expect(await settled(adaPage, 'session-status')).toEqual({ state: 'done', text: 'signed out (401)' })
    expect(await loginFormShown(adaPage)).toBe(true)

    await signIn(adaPage, ada)
    expect(await shownEmail(adaPage)).toBe(ada.user.email)
    expect(await adaPage.textContent('#user-name')).toBe('Ada Lovelace')
    expect(await adaPage.textContent('#user-credits')).toBe('10')

    const cookies = await adaContext.cookies()
    const named = (name: string) => cookies.find((cookie) => cookie.name === name)
    expect(named('XSRF-TOKEN')).toMatchObject({ domain: `.${SITE}`, httpOnly: false, sameSite: 'Lax' })
    expect(named('app_session')).toMatchObject({ domain: `.${SITE}`, httpOnly: true, sameSite: 'Lax' })
    expect(named('app_remember')).toBeUndefined()
  })

  it('keeps the session across a reload', async () => {
    expect(await reloadSpa(adaPage)).toEqual({ state: 'done', text: `signed in as ${ada.user.email}` })
    expect(await shownEmail(adaPage)).toBe(ada.user.email)
    expect(await loginFormShown(adaPage)).toBe(false)
  })

  it("delivers a message posted in another browser over Echo, leaving out the poster's own tab", async () => {
    ;({ context: bobContext, page: bobPage } = await signedInPage(bob))
    for (const page of [adaPage, bobPage]) {
      await page.fill('#group-id', String(groupId))
      const joined = await expectDone(page, 'chat-status', () => page.click('#join-form button[type=submit]'))
      expect(joined).toBe(`joined chat.group.${groupId}`)
    }

    await bobPage.fill('#message-body', 'Hello from app.trading.test')
    expect(
      await expectDone(bobPage, 'message-status', () => bobPage.click('#message-form button[type=submit]')),
    ).toMatch(/^sent #\d+$/)

    await adaPage.waitForSelector('#messages li')
    expect(await listed(adaPage, 'messages')).toEqual(['Bob Builder: Hello from app.trading.test'])
    // Bob's request carried his socket's X-Socket-Id, so his own tab was left out (toOthers).
    await adaPage.waitForTimeout(300)
    expect(await listed(bobPage, 'messages')).toEqual([])
  })

  it('hears the order-status notification of a credit hold created from the page', async () => {
    expect(await settled(adaPage, 'notifications-status')).toEqual({ state: 'done', text: 'listening' })
    await adaPage.fill('#hold-order', 'PO-SPA-0001')
    await adaPage.fill('#hold-amount', '2')
    expect(
      await expectDone(adaPage, 'hold-status', () => adaPage.click('#hold-form button[type=submit]')),
    ).toMatch(/^hold #\d+ held$/)
    await adaPage.waitForSelector('#notifications li')
    expect(await adaPage.textContent('#notifications li')).toBe('order-status-updated: held PO-SPA-0001')
  })

  it("streams the support assistant's answer to the end", async () => {
    // Counts the renders of the answer, to see that it arrived in pieces. (Page scripts are strings:
    // the project's TypeScript has no DOM library.)
    await adaPage.evaluate(`
      window.answerRenders = 0
      new MutationObserver(() => window.answerRenders++).observe(
        document.getElementById('assistant-answer'),
        { childList: true, characterData: true, subtree: true },
      )`)
    await adaPage.fill('#assistant-question', 'How do credit holds work?')
    expect(
      await expectDone(adaPage, 'assistant-status', () =>
        adaPage.click('#assistant-form button[type=submit]'),
      ),
    ).toBe('answered')
    const answer = (await adaPage.textContent('#assistant-answer')) ?? ''
    // The built-in offline model quotes the knowledge base's article.
    expect(answer).toContain('From the help article "Credit holds and automated orders"')
    expect(answer).toContain('Related articles:')
    expect(await adaPage.evaluate<number>('window.answerRenders')).toBeGreaterThan(1)
  })

  it('uploads a profile photo and shows it', async () => {
    await adaPage.setInputFiles('#photo-input', { name: 'me.png', mimeType: 'image/png', buffer: PNG })
    expect(await settled(adaPage, 'photo-status')).toEqual({ state: 'done', text: 'uploaded' })
    const src = await adaPage.getAttribute('#user-photo', 'src')
    expect(src).toMatch(new RegExp(`^${api}/storage/profile-photos/[A-Za-z0-9_-]{40}\\.png$`))
    await adaPage.waitForFunction(
      `document.getElementById('user-photo').complete && document.getElementById('user-photo').naturalWidth > 0`,
    )
  })

  it('signs out: the login form, and GET /api/user answers 401 afterwards', async () => {
    expect(await expectDone(adaPage, 'logout-status', () => adaPage.click('#logout'))).toBe('signed out')
    expect(await loginFormShown(adaPage)).toBe(true)
    expect(await reloadSpa(adaPage)).toEqual({ state: 'done', text: 'signed out (401)' })
    expect(await loginFormShown(adaPage)).toBe(true)
  })

  it('refuses plain forms from a sibling host that can read the XSRF-TOKEN cookie, and changes nothing', async () => {
    // Bob, signed in on app.trading.test, opens a page of evil.trading.test in the same browser.
    for (const [form, path] of [
      ['logout', '/api/logout'],
      ['message', '/api/message'],
    ] as const) {
      const attacker = await bobContext.newPage()
      try {
        await attacker.goto(evil)
        const stolen = await attacker.evaluate<string>('window.stolenToken')
        expect(stolen, 'the sibling host reads the parent-domain cookie').not.toBe('')
        const [answer] = await Promise.all([
          attacker.waitForResponse(
            (res) => res.url() === `${api}${path}` && res.request().method() === 'POST',
          ),
          attacker.evaluate(`document.getElementById('${form}').submit()`),
        ])
        expect([403, 419], `${path} answered ${answer.status()}: ${await answer.text()}`).toContain(
          answer.status(),
        )
      } finally {
        await attacker.close()
      }
    }

    // Still signed in, and no message was posted.
    expect(await reloadSpa(bobPage)).toEqual({ state: 'done', text: `signed in as ${bob.user.email}` })
    const group = await (await apiClientFor(ada)).get(`/api/group/${groupId}`)
    expect(group.status).toBe(200)
    const bodies = (group.data.data.messages as { body: string }[]).map((message) => message.body)
    expect(bodies).toContain('Hello from app.trading.test')
    expect(bodies).not.toContain(`posted by evil.${SITE}`)
  })

  // Last: moving the API's clock ends every other session of the app.
  it('remembers a device past the session lifetime, and the absolute one; without it the session ends', async () => {
    const dee = await createUser(t.database.db, { name: 'Dee Remembered' })
    const eve = await createUser(t.database.db, { name: 'Eve Forgotten' })
    const remembered = await signedInPage(dee, { remember: true })
    const forgotten = await signedInPage(eve)

    const rememberCookie = (await remembered.context.cookies()).find((c) => c.name === 'app_remember')
    expect(rememberCookie).toMatchObject({ domain: `.${SITE}`, httpOnly: true })
    expect((await forgotten.context.cookies()).some((c) => c.name === 'app_remember')).toBe(false)

    // Past SESSION_LIFETIME (idle): only the remembered device comes back.
    t.clock.advance(minutes(t.config.session.lifetimeMinutes + 1))
    expect(await reloadSpa(remembered.page)).toEqual({
      state: 'done',
      text: `signed in as ${dee.user.email}`,
    })
    expect(await reloadSpa(forgotten.page)).toEqual({ state: 'done', text: 'signed out (401)' })
    expect(await loginFormShown(forgotten.page)).toBe(true)

    // Past SESSION_ABSOLUTE_LIFETIME too: the device is still remembered.
    t.clock.advance(minutes(t.config.session.absoluteLifetimeMinutes + 1))
    expect(await reloadSpa(remembered.page)).toEqual({
      state: 'done',
      text: `signed in as ${dee.user.email}`,
    })
    // A write works on the session the remember cookie started (its XSRF-TOKEN came with it).
    expect(await expectDone(remembered.page, 'logout-status', () => remembered.page.click('#logout'))).toBe(
      'signed out',
    )
  })
})
