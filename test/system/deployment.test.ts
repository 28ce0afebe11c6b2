import { mkdtempSync, readFileSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { parse as parseDotenv } from 'dotenv'
import pg from 'pg'
import { Agent, setGlobalDispatcher } from 'undici'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { loadConfig } from '../../src/config.ts'
import { TestClient } from '../helpers/client.ts'
import { connected, echoAt, eventually } from '../helpers/echo.ts'
import { projectRoot } from '../helpers/project-root.ts'
import { ADMIN, migrationCount, registeredAt, type Stack, SUPPORT_EMAIL, startStack } from './stack.ts'

/**
 * The deployment recipe (deploy/) run for real: nginx rendered from deploy/nginx/, round robin over
 * two `node src/server.ts` processes in production mode, PostgreSQL migrated once by the release
 * step, one Redis; with SYSTEM_VIA_PGBOUNCER=1 the instances reach PostgreSQL through PgBouncer in
 * transaction pooling mode. Every request below goes through nginx.
 */
const viaPgBouncer = process.env.SYSTEM_VIA_PGBOUNCER === '1'

// The test's requests leave from 127.0.0.5, nginx reaches the instances from 127.0.0.1 (the one
// address they trust): the client address the app resolves must be the one nginx saw.
const CLIENT_ADDRESS = '127.0.0.5'
setGlobalDispatcher(new Agent({ localAddress: CLIENT_ADDRESS }))

let stack: Stack
/** The instance (`127.0.0.1:port`) that answered, from nginx's access log. */
const servedBy = (res: { headers: Headers }) => stack.nginx.servedBy(res.headers.get('x-request-id'))

/** A new user registered through nginx; the client is signed in as them. */
const registered = (name = 'System Trader') => registeredAt(stack.nginx.url, name, 'system')

async function signedIn(email: string, password: string) {
  const client = new TestClient(stack.nginx.url)
  await client.csrf()
  const res = await client.post('/api/login', { email, password })
  if (res.status !== 200) throw new Error(`login answered ${res.status} ${res.text}`)
  return client
}

/** The admin, signed in with the password confirmed (admin billing changes answer 423 without it). */
async function confirmedAdmin() {
  const client = await signedIn(ADMIN.email, ADMIN.password)
  const res = await client.post('/api/user/confirm-password', { password: ADMIN.password })
  if (res.status !== 201) throw new Error(`password confirmation answered ${res.status} ${res.text}`)
  return client
}

describe(`the deployment recipe: nginx over two instances, PostgreSQL ${viaPgBouncer ? 'through PgBouncer (transaction pooling)' : 'directly'}, Redis`, () => {
  beforeAll(async () => {
    stack = await startStack({ viaPgBouncer })
  }, 120_000)
  afterAll(async () => {
    await stack?.stop()
  }, 60_000)

  it('deploy/instance.env.example names every variable the instances here are given, and is a valid production config once its secrets are filled in', () => {
    const example = parseDotenv(readFileSync(join(projectRoot, 'deploy/instance.env.example')))
    const given = Object.keys(stack.env).filter((name) => name !== 'PATH' && name !== 'HOME')
    expect(given.filter((name) => !(name in example))).toEqual([])
    const secrets = {
      APP_KEY: stack.env.APP_KEY as string,
      REVERB_APP_ID: '1',
      REVERB_APP_KEY: 'key',
      REVERB_APP_SECRET: 'a-secret-of-twenty-chars',
      AI_API_KEY: 'model-key',
    }
    const cwd = mkdtempSync(join(tmpdir(), 'trading-api-env-example-'))
    let config: ReturnType<typeof loadConfig>
    try {
      config = loadConfig({ ...example, ...secrets }, cwd)
    } finally {
      rmSync(cwd, { recursive: true })
    }
    expect(config).toMatchObject({
      env: 'production',
      databasePooler: 'none',
      trustedProxies: ['10.0.0.5'],
      // The SPA on app.example.com, the API on api.example.com: the cookies belong to both.
      session: { domain: 'example.com' },
    })
    expect(config.storage.driver).toBe('s3')
  })

  it('the release step migrated the database once, straight to PostgreSQL, before the instances started', async () => {
    const { release } = stack
    expect(release.migrate.code, release.migrate.stderr).toBe(0)
    expect(release.migrate.stdout).toContain('Migrations applied (PostgreSQL at 127.0.0.1')
    const [applied] = await stack.sql<{ n: string }>('select count(*) as n from drizzle.__drizzle_migrations')
    expect(Number(applied?.n)).toBe(migrationCount())
    expect(release.createAdmin.code, release.createAdmin.stderr).toBe(0)
    if (viaPgBouncer) {
      // Through the pooler the CLI does not migrate (the migration lock is a session's): it says how.
      expect(release.throughPooler?.code).not.toBe(0)
      expect(release.throughPooler?.stderr).toContain('database migration(s) not applied')
      expect(release.throughPooler?.stderr).toContain('pointing at PostgreSQL itself (not the pooler)')
    }
  })

  it('signs in as the app does (CSRF cookie, X-XSRF-TOKEN), on either instance, seeing the address nginx saw', async () => {
    const client = new TestClient(stack.nginx.url)
    const cookie = await client.get('/guard/csrf-cookie')
    expect(cookie.status).toBe(204)
    expect(client.cookies.has('XSRF-TOKEN')).toBe(true)
    const refused = await client.post(
      '/api/login',
      { email: ADMIN.email, password: ADMIN.password },
      {
        withoutCsrf: true,
      },
    )
    expect(refused.status).toBe(419)
    // What a client writes in X-Forwarded-For is kept in front of what nginx appends, and not believed.
    const login = await client.post(
      '/api/login',
      { email: ADMIN.email, password: ADMIN.password },
      { headers: { 'x-forwarded-for': '203.0.113.7' } },
    )
    expect(login.status, login.text).toBe(200)
    expect(login.data).toEqual({ two_factor: false })

    // The session is in PostgreSQL: the next requests alternate between the instances.
    const first = await client.get('/api/user')
    const second = await client.get('/api/user')
    expect([first.status, second.status]).toEqual([200, 200])
    expect(first.data.email).toBe(ADMIN.email)
    expect(second.data.email).toBe(ADMIN.email)
    const instances = new Set([await servedBy(first), await servedBy(second)])
    expect(instances).toEqual(new Set(stack.instances.map((i) => i.address)))

    const sessions = await client.get('/api/user-profile/sessions')
    expect(sessions.status).toBe(200)
    expect(sessions.data.map((s: { ip_address: string }) => s.ip_address)).toEqual([CLIENT_ADDRESS])
  })

  it('shares a cached upstream read between the instances, and a write through either clears it for both', async () => {
    const { client } = await registered()
    const markets = async () => {
      const res = await client.get('/api/markets')
      expect(res.status, res.text).toBe(200)
      return { cache: res.headers.get('x-cache'), by: await servedBy(res), data: res.data }
    }
    const calls = () => stack.upstream.callsTo('GET', '/markets').length
    const before = calls()
    const miss = await markets()
    const hit = await markets()
    expect([miss.cache, hit.cache]).toEqual(['MISS', 'HIT'])
    expect(hit.by).not.toBe(miss.by)
    expect(hit.data).toEqual(miss.data)
    expect(calls() - before).toBe(1)

    // Per-user strategy reads: cached on one instance, cleared by a create served by the other.
    const strategies = async () => {
      const res = await client.get('/api/strategies')
      expect(res.status, res.text).toBe(200)
      return {
        cache: res.headers.get('x-cache'),
        by: await servedBy(res),
        ids: (res.data as Array<{ id: unknown }>).map((s) => s.id),
      }
    }
    const listed = await strategies()
    const cached = await strategies()
    expect([listed.cache, cached.cache]).toEqual(['MISS', 'HIT'])
    expect(cached.by).not.toBe(listed.by)
    const created = await client.post('/api/strategies', { name: 'Through nginx', symbol: 'AAPL' })
    expect(created.status, created.text).toBe(201)
    const writer = await servedBy(created)
    const after = await strategies()
    expect(after.by).not.toBe(writer)
    expect(after.cache).toBe('MISS')
    expect(after.ids).toContain(created.data.data.id)
    const again = await strategies()
    expect(again.by).toBe(writer)
    expect(again.cache).toBe('HIT')
    expect(again.ids).toEqual(after.ids)
  })

  it('100 concurrent hold creates of one user over both instances hold exactly the spendable credits', async () => {
    const { client, id } = await registered()
    const admin = await confirmedAdmin()
    const grant = await admin.post(`/api/admin/users/${id}/billing/adjust`, {
      amount: 37,
      reason: 'system test',
    })
    expect(grant.status, grant.text).toBe(200)
    // The audit record names the client nginx saw, not nginx.
    expect(grant.data.audit[0]).toMatchObject({ action: 'billing.adjust', ip_address: CLIENT_ADDRESS })
    await client.csrf()

    const creates = await Promise.all(
      Array.from({ length: 100 }, (_, i) =>
        client.post('/api/credit-holds', { broker_parent_order_id: `system-${i}`, credits_amount: 1 }),
      ),
    )
    const statuses = creates.map((res) => res.status)
    expect(creates.filter((res) => res.status !== 201 && res.status !== 422).map((res) => res.text)).toEqual(
      [],
    )
    expect(statuses.filter((status) => status === 201)).toHaveLength(37)
    expect(statuses.filter((status) => status === 422)).toHaveLength(63)
    const by = new Set(await Promise.all(creates.map((res) => servedBy(res))))
    expect(by).toEqual(new Set(stack.instances.map((i) => i.address)))

    const me = await client.get('/api/user')
    expect(me.data).toMatchObject({
      available_credits: 37,
      held_credits: 37,
      credits_available_for_automation: 0,
    })
    const [held] = await stack.sql<{ n: string; total: string }>(
      `select count(*) as n, sum(credits_amount) as total from credit_holds where user_id = ${id} and status = 'held'`,
    )
    expect(Number(held?.n)).toBe(37)
    expect(Number(held?.total)).toBe(37)
    if (viaPgBouncer) {
      // Two pools of 10 went through PgBouncer's 5 server connections (and this check's own one).
      const [open] = await stack.sql<{ n: string }>(
        'select count(*) as n from pg_stat_activity where datname = current_database()',
      )
      expect(Number(open?.n)).toBeLessThanOrEqual(5 + 1)
    }
  })

  it('bounds every statement: a request waiting on a locked table answers 503 at the lock time-out (through PgBouncer: its connect_query)', async () => {
    const { client, id } = await registered('Lock Waiter')
    const admin = await confirmedAdmin()
    expect(
      (await admin.post(`/api/admin/users/${id}/billing/adjust`, { amount: 5, reason: 'lock' })).status,
    ).toBe(200)
    await client.csrf()
    const lock = new pg.Client({ connectionString: stack.env.DATABASE_URL })
    await lock.connect()
    try {
      await lock.query('begin')
      await lock.query('lock table credit_holds in access exclusive mode')
      const sent = Date.now()
      const res = await client.post(
        '/api/credit-holds',
        { broker_parent_order_id: 'locked', credits_amount: 1 },
        { timeoutMs: 10_000 },
      )
      const waitedMs = Date.now() - sent
      expect(res.status, res.text).toBe(503)
      expect(res.headers.get('retry-after')).not.toBeNull()
      // DATABASE_LOCK_TIMEOUT_MS (3 s); the lock is held until the answer comes.
      expect(waitedMs).toBeGreaterThanOrEqual(2_500)
      expect(waitedMs).toBeLessThan(5_000)
    } finally {
      await lock.query('rollback').catch(() => {})
      await lock.end()
    }
    const [holds] = await stack.sql<{ n: string }>(
      `select count(*) as n from credit_holds where user_id = ${id}`,
    )
    expect(Number(holds?.n)).toBe(0)
  })

  it('a chat message posted through one instance reaches a socket held by the other', async () => {
    const owner = await registered('Owner')
    const member = await registered('Member')
    const group = await owner.client.post('/api/group', { name: 'Across instances' })
    expect(group.status, group.text).toBe(201)
    const groupId = group.data.data.id as number
    expect((await member.client.post(`/api/group/${groupId}/join`)).status).toBe(200)

    const echo = echoAt(stack.nginx.url, stack.realtimeKey, member.client)
    const received: string[] = []
    try {
      await connected(echo)
      echo
        .private(`chat.group.${groupId}`)
        .listen('.App\\Events\\SocketMessage', (event: { message: { body: string } }) => {
          received.push(event.message.body)
        })
      const pusher = (
        echo.connector as unknown as { pusher: { channel(name: string): { subscribed: boolean } } }
      ).pusher
      await eventually(() => pusher.channel(`private-chat.group.${groupId}`)?.subscribed, 5000)

      // Two posts in a row: round robin sends one to each instance.
      const posted: Array<{ body: string; by: string }> = []
      for (const body of ['first through nginx', 'second through nginx']) {
        const res = await owner.client.post('/api/message', { group_id: groupId, body })
        expect(res.status, res.text).toBe(201)
        posted.push({ body, by: await servedBy(res) })
      }
      await eventually(() => received.length === 2, 5000)
      expect(received.sort()).toEqual(posted.map((p) => p.body).sort())
      expect(new Set(posted.map((p) => p.by)).size).toBe(2)
    } finally {
      echo.disconnect()
    }
    // nginx logs the socket's upgrade request when it closes: the instance that held it.
    const socketLine = await eventually(
      () =>
        stack.nginx
          .accessLines()
          .find((line) => line.request.startsWith(`GET /app/${stack.realtimeKey}?`) && line.status === 101),
      5000,
    )
    const socketInstance = socketLine.upstreams.at(-1)
    expect(stack.instances.map((i) => i.address)).toContain(socketInstance)
  })

  it('takes an upload past the 1 MiB nginx allows by default: a chat message with an 8 MiB attachment', async () => {
    const owner = await registered('Uploader')
    const group = await owner.client.post('/api/group', { name: 'Large files' })
    expect(group.status, group.text).toBe(201)
    await owner.client.csrf()
    const form = new FormData()
    form.set('group_id', String(group.data.data.id))
    form.set('body', 'The statement, as a PDF')
    const pdf = Buffer.concat([Buffer.from('%PDF-1.7\n'), Buffer.alloc(8 * 1024 * 1024, 0x20)])
    form.append('attachments[]', new Blob([pdf], { type: 'application/pdf' }), 'statement.pdf')
    const res = await fetch(`${stack.nginx.url}/api/message`, {
      method: 'POST',
      body: form,
      headers: {
        accept: 'application/json',
        origin: owner.client.origin,
        cookie: owner.client.cookieHeader,
        'x-xsrf-token': decodeURIComponent(owner.client.cookies.get('XSRF-TOKEN') ?? ''),
      },
    })
    const body = (await res.json()) as { data: { attachments: Array<{ size: number }> } }
    expect(res.status, JSON.stringify(body)).toBe(201)
    expect(body.data.attachments).toHaveLength(1)
    expect(body.data.attachments[0]?.size).toBe(pdf.length)
  })

  it('streams an AI answer through nginx: the first chunk arrives long before the model has finished', async () => {
    const { client } = await registered()
    await client.csrf()
    const pieces = ['Holds ', 'reserve ', 'credits ', 'for ', 'orders.']
    stack.model.reply({ text: pieces, gapMs: 400 })
    const started = performance.now()
    const res = await fetch(`${stack.nginx.url}/api/ai/agents/support`, {
      method: 'POST',
      headers: {
        'content-type': 'application/json',
        accept: 'text/event-stream',
        origin: client.origin,
        cookie: client.cookieHeader,
        'x-xsrf-token': decodeURIComponent(client.cookies.get('XSRF-TOKEN') ?? ''),
      },
      body: JSON.stringify({
        id: 'chat_system',
        messages: [{ id: 'msg_1', role: 'user', parts: [{ type: 'text', text: 'What is a hold?' }] }],
        trigger: 'submit-message',
      }),
    })
    expect(res.status).toBe(200)
    expect(res.headers.get('content-type')).toContain('text/event-stream')
    expect(res.headers.get('content-encoding')).toBeNull()
    const reader = (res.body as ReadableStream<Uint8Array>).getReader()
    const decoder = new TextDecoder()
    let text = ''
    let firstDeltaAt: number | undefined
    for (;;) {
      const { done, value } = await reader.read()
      if (done) break
      text += decoder.decode(value, { stream: true })
      if (firstDeltaAt === undefined && text.includes('"type":"text-delta"')) firstDeltaAt = performance.now()
    }
    const endedAt = performance.now()
    expect(text).toContain('data: [DONE]')
    const deltas = [...text.matchAll(/"type":"text-delta","id":"[^"]*","delta":"([^"]*)"/g)].map((m) => m[1])
    expect(deltas.join('')).toBe(pieces.join(''))
    // The model spends 4 x 400 ms between its first piece and its last: held back anywhere on the
    // way (nginx buffering, gzip), the first piece would arrive with the last.
    expect(firstDeltaAt).toBeDefined()
    expect(endedAt - (firstDeltaAt as number)).toBeGreaterThan(1200)
    expect((firstDeltaAt as number) - started).toBeLessThan(endedAt - started - 1200)
  })

  it('sends each support mail exactly once, though both instances run the outbox', async () => {
    const senders = [await registered('Sender one'), await registered('Sender two')]
    const subjects = senders.flatMap((_, s) => Array.from({ length: 8 }, (_, i) => `System ticket ${s}-${i}`))
    const answers = await Promise.all(
      subjects.map((subject, n) =>
        (senders[n % 2] as (typeof senders)[number]).client.post('/api/support-request', {
          subject,
          message: 'Please look at my holds, they seem stuck.',
          category: 'billing',
        }),
      ),
    )
    for (const res of answers) expect(res.status, res.text).toBe(200)
    expect(new Set(await Promise.all(answers.map((res) => servedBy(res)))).size).toBe(2)
    // Staff mails are titled `[Support request] <subject>`.
    const toSupport = () =>
      stack.smtp.to(SUPPORT_EMAIL).filter((mail) => subjects.some((s) => mail.subject.endsWith(`] ${s}`)))
    await eventually(() => toSupport().length >= subjects.length, 15_000)
    // Both outbox workers poll every 5 s: after one more round each, still one mail per request.
    await new Promise((resolve) => setTimeout(resolve, 5_500))
    for (const subject of subjects) {
      expect(
        toSupport().filter((mail) => mail.subject.endsWith(`] ${subject}`)),
        subject,
      ).toHaveLength(1)
    }
  })

  // Last: it restarts both instances.
  it('a rolling restart (out of nginx, SIGTERM, exit, start on the same port, back; then the other) under steady load fails no request', async () => {
    const loaders = await Promise.all([
      registered('Load one'),
      registered('Load two'),
      registered('Load three'),
    ])
    const failures: Array<{ what: string; requestId: string | null }> = []
    // Requests the client sent again, as a browser does: an old nginx worker retiring at a reload
    // closes its idle kept-alive client connections, and a request written on one at that instant
    // never reaches nginx. Chromium resends any request, POST included, whose reused connection
    // closed before a byte of answer; undici's fetch does not, so the loop does it here, once. That
    // such a request was never acted on is checked below: no activity is recorded twice.
    const resent: string[] = []
    let answered = 0
    let postsAnswered = 0
    let running = true
    const load = loaders.map(async ({ client }, n) => {
      await client.csrf()
      for (let i = 0; running; i++) {
        const what = i % 2 === 0 ? 'GET /api/user' : 'POST /api/activities'
        const send = () =>
          i % 2 === 0
            ? client.get('/api/user')
            : client.post('/api/activities', { type: 'rolling_restart', description: `${n}-${i}` })
        try {
          const res = await send().catch((error: unknown) => {
            if (!(error instanceof TypeError)) throw error
            resent.push(`${what}: ${String(error.cause ?? error)}`)
            return send()
          })
          if (res.status === 200) {
            answered++
            if (i % 2 === 1) postsAnswered++
          } else
            failures.push({
              what: `${what}: ${res.status} ${res.text.slice(0, 200)}`,
              requestId: res.headers.get('x-request-id'),
            })
        } catch (error) {
          failures.push({ what: `${what}: ${String(error)}`, requestId: null })
        }
        await new Promise((resolve) => setTimeout(resolve, 20))
      }
    })

    const restarts: string[] = []
    try {
      for (const instance of stack.instances) {
        const before = answered
        // The recipe's procedure (deploy/README.md, Rolling restart): out of nginx's rotation, stop, start, back.
        await stack.nginx.setInstance('down', instance.address)
        const exit = await instance.stop()
        expect(exit, `instance ${instance.name} exit`).toEqual({ code: 0, signal: null })
        await instance.start()
        const mark = stack.nginx.accessLines().length
        await stack.nginx.setInstance('up', instance.address)
        await eventually(
          () =>
            stack.nginx
              .accessLines()
              .slice(mark)
              .some((line) => line.upstreams.at(-1) === instance.address && line.status === 200),
          20_000,
        )
        restarts.push(`${instance.name}: ${answered - before} answers meanwhile`)
      }
    } finally {
      running = false
      await Promise.all(load)
    }
    const lines = stack.nginx.accessLines()
    const explained = failures.map(
      ({ what, requestId }) =>
        `${what} | nginx: ${lines.find((line) => line.requestId === requestId)?.line ?? '-'}`,
    )
    expect(explained, `${restarts.join('; ')}\n${stack.logs()}`).toEqual([])
    expect(answered).toBeGreaterThan(100)
    // A handful at most (one per reload and client), and none of them acted on twice.
    expect(resent.length, resent.join('\n')).toBeLessThanOrEqual(4 * loaders.length)
    const [recorded] = await stack.sql<{ n: string; distinct_n: string }>(
      "select count(*) as n, count(distinct (user_id, description)) as distinct_n from activities where type = 'rolling_restart'",
    )
    expect(Number(recorded?.n)).toBe(postsAnswered)
    expect(Number(recorded?.distinct_n)).toBe(postsAnswered)
  }, 90_000)
})
