import os from 'node:os'
import autocannon from 'autocannon'
import pg from 'pg'
import { Pool } from 'undici'
import { systemClock } from '../src/lib/clock.ts'
import { createEventBus } from '../src/lib/events.ts'
import { createUsersService } from '../src/modules/users/users.service.ts'
import {
  load1,
  percentile,
  type RunResult,
  runClients,
  startBenchApp,
  timedCaller,
  writeBenchJson,
} from './harness.ts'
import { BENCH_PASSWORD, signIn } from './sign-in.ts'

const SECONDS = Number(process.env.BENCH_SECONDS ?? 10)
const BASELINE_SECONDS = Number(process.env.BENCH_BASELINE_SECONDS ?? 5)
const SIDEBAR_SECONDS = Number(process.env.BENCH_SIDEBAR_SECONDS ?? 10)
const SIDEBAR_CONNECTIONS = Number(process.env.BENCH_SIDEBAR_CONNECTIONS ?? 1)
const CLIENTS = 32
// Each client posts as its own users in turn: 640 users at 60 messages a minute allow 3,840 a second.
const USERS_PER_CLIENT = 20
const POSTERS = CLIENTS * USERS_PER_CLIENT
const POSTING_GROUPS = 20
const READER_GROUPS = 200
const SEEDED_MESSAGES = 200_000
// A member's read marker stays up to this many messages back, so most conversations show some unread.
const UNREAD_SPREAD = 30
const SIDEBAR_TARGET_MS = 20

interface Session {
  userId: number
  headers: Record<string, string>
  /** The posting group this user writes to. */
  groupId: number
}

/** `tasks` jobs, `width` at a time (setting up users and memberships over HTTP). */
async function inParallel(tasks: number, width: number, job: (i: number) => Promise<void>) {
  await Promise.all(
    Array.from({ length: width }, async (_, worker) => {
      for (let i = worker; i < tasks; i += width) await job(i)
    }),
  )
}

interface Figures {
  rate: number
  mean: number
  p50: number
  p99: number
  non2xx: number
  errors: number
  load: string
}

/** autocannon at SIDEBAR_CONNECTIONS for SIDEBAR_SECONDS, its load generated in a worker thread. */
async function load(url: string, headers: Record<string, string>): Promise<Figures> {
  const result = await autocannon({
    url,
    headers,
    connections: SIDEBAR_CONNECTIONS,
    duration: SIDEBAR_SECONDS,
    workers: 1,
  })
  return {
    rate: result.requests.average,
    // Little's law: autocannon's own mean, like its percentiles, counts whole milliseconds.
    mean: (SIDEBAR_CONNECTIONS * 1000) / result.requests.average,
    p50: result.latency.p50,
    p99: result.latency.p99,
    non2xx: result.non2xx,
    errors: result.errors,
    load: load1(),
  }
}

async function main() {
  const bench = await startBenchApp('bench_chat')
  const { database, appUrl } = bench
  const sql = new pg.Client({ connectionString: bench.databaseUrl })
  try {
    const http = new Pool(appUrl, { connections: CLIENTS, pipelining: 1 })
    await sql.connect()

    const call = timedCaller(http)
    const expect = async (
      status: number,
      method: 'GET' | 'POST',
      path: string,
      session: Session,
      body?: unknown,
    ) => {
      const res = await call(method, path, session, body)
      if (res.status !== status) throw new Error(`${method} ${path} answered ${res.status}: ${res.text}`)
      return JSON.parse(res.text) as { data: { id: number } }
    }

    // Users, signed in over HTTP (argon2 hashing and verifying: a few at a time).
    const users = createUsersService({ db: database.db, clock: systemClock, events: createEventBus() })
    const newSession = async (email: string, userName: string): Promise<Session> => {
      const user = await users.create({ name: userName, email, password: BENCH_PASSWORD, verified: true })
      return { userId: user.id, headers: await signIn(http, email), groupId: 0 }
    }
    const setupStarted = performance.now()
    const reader = await newSession('bench-reader@example.com', 'Bench reader')
    const sessions: Session[] = new Array(POSTERS)
    await inParallel(POSTERS, 4, async (i) => {
      sessions[i] = await newSession(`bench-${i}@example.com`, `Bench ${i}`)
    })

    // The reader's groups; the first POSTING_GROUPS are the ones posted to.
    const groupIds: number[] = new Array(READER_GROUPS)
    await inParallel(READER_GROUPS, 8, async (g) => {
      const created = await expect(201, 'POST', '/api/group', reader, { name: `Bench group ${g}` })
      groupIds[g] = created.data.id
    })
    groupIds.sort((a, b) => a - b)
    const postingGroups = groupIds.slice(0, POSTING_GROUPS)
    const quietGroups = groupIds.slice(POSTING_GROUPS)
    await inParallel(POSTERS, CLIENTS, async (i) => {
      const session = sessions[i] as Session
      session.groupId = postingGroups[i % postingGroups.length] as number
      const quiet = quietGroups[i % quietGroups.length] as number
      await expect(200, 'POST', `/api/group/${session.groupId}/join`, session)
      await expect(200, 'POST', `/api/group/${quiet}/join`, session)
    })
    const setupSeconds = (performance.now() - setupStarted) / 1000

    // History, set-based: SEEDED_MESSAGES interleaved over the groups, 10 ms apart, ending now, each
    // by one of its group's members; then every counter as the service keeps it.
    const seedStarted = performance.now()
    const perGroup = Math.ceil(SEEDED_MESSAGES / READER_GROUPS)
    await sql.query(
      `with members as (
         select group_id, user_id,
           row_number() over (partition by group_id order by user_id) - 1 as rn,
           count(*) over (partition by group_id) as n
         from chat_group_members
       ), slots as (
         select g.id as group_id, s.i, row_number() over (order by s.i, g.id) as seq
         from chat_groups g cross join generate_series(1, $1::int) s(i)
       )
       insert into chat_messages (group_id, user_id, kind, body, created_at)
       select x.group_id, m.user_id, 'user',
         'Seeded message ' || x.i || ' in group ' || x.group_id || ', long enough to look like a sentence.',
         now() - ($2::int - x.seq) * interval '10 milliseconds'
       from slots x join members m on m.group_id = x.group_id and m.rn = (x.i + x.group_id) % m.n
       order by x.seq`,
      [perGroup, perGroup * READER_GROUPS],
    )
    await sql.query(`
      update chat_groups g set member_count = c.n
      from (select group_id, count(*)::int as n from chat_group_members group by group_id) c
      where c.group_id = g.id`)
    await sql.query(`
      update chat_groups g set last_message_id = l.id, last_activity_at = l.created_at
      from (select distinct on (group_id) group_id, id, created_at from chat_messages order by group_id, id desc) l
      where l.group_id = g.id`)
    // Every other group of the reader is read to the end; elsewhere markers lie up to UNREAD_SPREAD back.
    await sql.query(
      `update chat_group_members m set last_read_message_id = coalesce((
         select x.id from chat_messages x where x.group_id = m.group_id order by x.id desc
         offset (case when m.user_id = $1 and m.group_id % 2 = 0 then 0 else (m.user_id + m.group_id) % $2 end)
         limit 1), 0)`,
      [reader.userId, UNREAD_SPREAD],
    )
    await sql.query(`
      update chat_group_members m set unread_count = (
        select count(*)::int from chat_messages x
        where x.group_id = m.group_id and x.id > m.last_read_message_id and x.kind <> 'system'
          and x.user_id is distinct from m.user_id)`)
    await sql.query('vacuum analyze chat_messages, chat_groups, chat_group_members')
    const seedSeconds = (performance.now() - seedStarted) / 1000
    const seeded = await sql.query<{ messages: string; notices: string; max: string }>(
      `select count(*) filter (where kind = 'user')::text as messages,
         count(*) filter (where kind = 'system')::text as notices,
         coalesce(max(id), 0)::text as max from chat_messages`,
    )
    const before = Number(seeded.rows[0]?.max)

    // (a) baseline and (b) posting, same clients.
    const baseline = await runClients(CLIENTS, sessions, BASELINE_SECONDS, async (session, _n, result) => {
      const res = await call('GET', '/api/credits', session)
      if (res.status !== 200) result.errors++
      return [res.ms]
    })
    const posting = await runClients(CLIENTS, sessions, SECONDS, async (session, n, result) => {
      const res = await call('POST', '/api/message', session, {
        group_id: session.groupId,
        body: `Bench message ${n} from user ${session.userId}.`,
      })
      result.statuses.set(res.status, (result.statuses.get(res.status) ?? 0) + 1)
      if (res.status === 201) result.succeeded++
      else result.errors++
      return [res.ms]
    })

    // After the storm: the stored messages against the 201 answers, and every counter against the rows.
    const stored = Number(
      (
        await sql.query<{ n: string }>(
          `select count(*)::text as n from chat_messages where id > $1 and kind = 'user'`,
          [before],
        )
      ).rows[0]?.n,
    )
    const problems = await sql.query<{ check: string; n: string }>(`
      select 'last_message_id is not the newest message' as check, count(*)::text as n from chat_groups g
        where g.last_message_id is distinct from (select max(id) from chat_messages m where m.group_id = g.id)
      union all
      select 'last_activity_at is not the newest message''s time', count(*)::text from chat_groups g
        where g.last_activity_at <> (select m.created_at from chat_messages m where m.id = g.last_message_id)
      union all
      select 'member_count differs from the members', count(*)::text from chat_groups g
        where g.member_count <> (select count(*) from chat_group_members m where m.group_id = g.id)
      union all
      select 'unread_count differs from the messages after the read marker', count(*)::text
        from chat_group_members m
        where m.unread_count <> (select count(*) from chat_messages x
          where x.group_id = m.group_id and x.id > m.last_read_message_id and x.kind <> 'system'
            and x.user_id is distinct from m.user_id)
    `)
    const failed = problems.rows.filter((row) => row.n !== '0')
    const consistent = failed.length === 0 && stored === posting.succeeded

    // (c) the reader's sidebar, against the reader's baseline read, both with autocannon.
    const readerHeaders = { cookie: reader.headers.cookie ?? '', accept: 'application/json' }
    const sample = await call('GET', '/api/sidebar-conversations', reader)
    if (sample.status !== 200) throw new Error(`GET /api/sidebar-conversations answered ${sample.status}`)
    const conversations = (JSON.parse(sample.text) as { data: { unread_count: number }[] }).data
    const unread = conversations.filter((c) => c.unread_count > 0)
    await http.close()
    const readerBaseline = await load(`${appUrl}/api/credits`, readerHeaders)
    const sidebar = await load(`${appUrl}/api/sidebar-conversations`, readerHeaders)

    const cpu = os.cpus()
    const line = (label: string, r: RunResult, unit = 'req/s') =>
      `${label.padEnd(34)} ${(r.succeeded > 0 ? r.succeeded / r.seconds : r.ops / r.seconds).toFixed(0).padStart(6)} ${unit.padEnd(10)} p50 ${percentile(r.latencies, 50).toFixed(1)} ms   p99 ${percentile(r.latencies, 99).toFixed(1)} ms   errors ${r.errors}   load ${r.load}`
    const row = (label: string, f: Figures) =>
      `${label.padEnd(34)} ${f.rate.toFixed(0).padStart(6)} ${'req/s'.padEnd(10)} mean ${f.mean.toFixed(2)} ms   p50 ${f.p50} ms   p99 ${f.p99} ms   non-2xx ${f.non2xx}, errors ${f.errors}   load ${f.load}`
    console.log(
      `chat benchmark: ${POSTERS} posters (${USERS_PER_CLIENT} per client), ${CLIENTS} concurrent clients, ${POSTING_GROUPS} posting groups; PostgreSQL (pool of 10), one app instance`,
    )
    console.log(
      `machine: ${cpu.length} x ${cpu[0]?.model ?? 'unknown cpu'}, node ${process.version}, load average at the end ${os
        .loadavg()
        .map((l) => l.toFixed(2))
        .join(' ')}`,
    )
    console.log(
      `setup: ${POSTERS + 1} users signed in, ${READER_GROUPS} groups, ${2 * POSTERS} joins over HTTP in ${setupSeconds.toFixed(1)} s; ` +
        `${seeded.rows[0]?.messages} messages seeded (besides ${seeded.rows[0]?.notices} join notices), counters set, in ${seedSeconds.toFixed(1)} s`,
    )
    console.log(line(`(a) baseline GET /api/credits`, baseline))
    console.log(line(`(b) POST /api/message`, posting, 'messages/s'))
    console.log(
      `    answers: ${[...posting.statuses].map(([status, n]) => `${n} x ${status}`).join(', ')} in ${posting.seconds.toFixed(1)} s; ratio b/a ${(posting.succeeded / posting.seconds / (baseline.ops / baseline.seconds)).toFixed(2)}`,
    )
    console.log(
      consistent
        ? `    stored: consistent (${stored} messages stored = ${posting.succeeded} answered 201; counters agree with the rows)`
        : `    stored: INCONSISTENT ${JSON.stringify(failed)} stored=${stored} answered 201=${posting.succeeded}`,
    )
    console.log(
      `(c) reader in ${conversations.length} groups (${unread.length} with unread, ${unread.reduce((sum, c) => sum + c.unread_count, 0)} unread), sidebar answer ${sample.text.length} bytes; autocannon, ${SIDEBAR_CONNECTIONS} connection(s), ${SIDEBAR_SECONDS} s each`,
    )
    console.log(row(`    baseline GET /api/credits`, readerBaseline))
    console.log(row(`    GET /api/sidebar-conversations`, sidebar))
    console.log(
      `    sidebar p99 ${sidebar.p99} ms (target <= ${SIDEBAR_TARGET_MS} ms: ${sidebar.p99 <= SIDEBAR_TARGET_MS ? 'met' : 'NOT met'}); ratio to baseline ${(sidebar.rate / readerBaseline.rate).toFixed(2)} (req/s)`,
    )
    const figures = (r: RunResult) => ({
      rate: (r.succeeded > 0 ? r.succeeded : r.ops) / r.seconds,
      p50: percentile(r.latencies, 50),
      p99: percentile(r.latencies, 99),
      errors: r.errors,
      load: r.load,
    })
    const json = writeBenchJson('chat', {
      baseline: figures(baseline),
      posting: figures(posting),
      stored: { consistent, stored: Number(stored), answered: posting.succeeded },
      readerBaseline,
      sidebar,
      sidebarTargetMs: SIDEBAR_TARGET_MS,
    })
    if (json) console.log(`figures written to ${json}`)
    const clean = (f: Figures) => f.non2xx === 0 && f.errors === 0
    if (
      !consistent ||
      posting.errors > 0 ||
      baseline.errors > 0 ||
      !clean(sidebar) ||
      !clean(readerBaseline)
    ) {
      process.exitCode = 1
    }
  } finally {
    await sql.end().catch(() => {})
    await bench.close()
  }
}

await main()
