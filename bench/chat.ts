import { writeFileSync } from 'node:fs'
import { Session as InspectorSession } from 'node:inspector/promises'
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
import { createTargets } from './targets.ts'

const SECONDS = Number(process.env.BENCH_SECONDS ?? 10)
const BASELINE_SECONDS = Number(process.env.BENCH_BASELINE_SECONDS ?? 5)
const SIDEBAR_SECONDS = Number(process.env.BENCH_SIDEBAR_SECONDS ?? 10)
const SIDEBAR_CONNECTIONS = Number(process.env.BENCH_SIDEBAR_CONNECTIONS ?? 1)
// A path: the posting phase's CPU profile of this process (the app and its clients) is written there.
const CPU_PROFILE = process.env.BENCH_CPU_PROFILE
const CLIENTS = 32
// Each client posts as its own users in turn: 640 users at 60 messages a minute allow 3,840 a second.
const USERS_PER_CLIENT = 20
const POSTERS = CLIENTS * USERS_PER_CLIENT
const POSTING_GROUPS = 20
const READER_GROUPS = 200
// The wide reader: in the reader's groups and in more, made set-based, up to this many in all
// (BENCH_WIDE_GROUPS=0 leaves them out); each added group gets WIDE_MESSAGES_PER_GROUP messages.
const WIDE_GROUPS = Number(process.env.BENCH_WIDE_GROUPS ?? 2000)
const WIDE_MESSAGES_PER_GROUP = 20
const SEEDED_MESSAGES = 200_000
// A member's read marker stays up to this many messages back, so most conversations show some unread.
const UNREAD_SPREAD = 30
const SIDEBAR_TARGET_MS = 20
const POST_RATIO_GOAL = 0.5
// Room size: posts to a big and a small group, alternately, one at a time, by posters of their own
// (each posts ROOM_POSTS_EACH times, within the per-user limit of 60 a minute).
const BIG_ROOM = Number(process.env.BENCH_BIG_ROOM ?? 5000)
const SMALL_ROOM = 10
const ROOM_POSTERS = 10
const ROOM_POSTS_EACH = 20
const ROOM_RATIO_GOAL = 1.5

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

    // The reader's groups, each created by a poster (a user may create only a few a minute) and
    // joined by the reader; the first POSTING_GROUPS are the ones posted to.
    const groupIds: number[] = new Array(READER_GROUPS)
    await inParallel(READER_GROUPS, 8, async (g) => {
      const created = await expect(201, 'POST', '/api/group', sessions[g] as Session, {
        name: `Bench group ${g}`,
      })
      groupIds[g] = created.data.id
      await expect(200, 'POST', `/api/group/${created.data.id}/join`, reader)
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
    // The wide reader, in the reader's groups and in WIDE_GROUPS - READER_GROUPS more: groups owned by
    // posters (a member besides), set-based, as the silent members of (d) are.
    const wide =
      WIDE_GROUPS > 0 ? await newSession('bench-wide-reader@example.com', 'Bench wide reader') : null
    if (wide) {
      await sql.query(
        `insert into chat_group_members (group_id, user_id, role, joined_at)
         select g, $1::bigint, 'member', now() from unnest($2::bigint[]) g`,
        [wide.userId, groupIds],
      )
      await sql.query(
        `with made as (
           insert into chat_groups (name, owner_id, last_activity_at, created_at, updated_at)
           select 'Bench wide group ' || s.i, ($2::bigint[])[1 + s.i % cardinality($2::bigint[])], now(), now(), now()
           from generate_series(1, $3::int) s(i)
           returning id, owner_id
         )
         insert into chat_group_members (group_id, user_id, role, joined_at)
         select id, owner_id, 'owner', now() from made
         union all select id, $1::bigint, 'member', now() from made
         union all select id, ($2::bigint[])[1 + array_position($2::bigint[], owner_id) % cardinality($2::bigint[])],
           'member', now() from made`,
        [wide.userId, sessions.map((session) => session.userId), WIDE_GROUPS - READER_GROUPS],
      )
    }
    const setupSeconds = (performance.now() - setupStarted) / 1000

    // History, set-based: SEEDED_MESSAGES interleaved over the reader's groups (and a few in each of the
    // wide reader's others), 10 ms apart, ending now, each by one of its group's members; then every
    // counter as the service keeps it.
    const seedStarted = performance.now()
    const perGroup = Math.ceil(SEEDED_MESSAGES / READER_GROUPS)
    const wideOnly = wide ? WIDE_GROUPS - READER_GROUPS : 0
    const seededCount = perGroup * READER_GROUPS + WIDE_MESSAGES_PER_GROUP * wideOnly
    await sql.query(
      `with members as (
         select group_id, user_id,
           row_number() over (partition by group_id order by user_id) - 1 as rn,
           count(*) over (partition by group_id) as n
         from chat_group_members
       ), slots as (
         select g.id as group_id, s.i, row_number() over (order by s.i, g.id) as seq
         from chat_groups g
           cross join generate_series(1, case when g.id = any($3::bigint[]) then $1::int else $4::int end) s(i)
       )
       insert into chat_messages (group_id, user_id, kind, body, created_at)
       select x.group_id, m.user_id, 'user',
         'Seeded message ' || x.i || ' in group ' || x.group_id || ', long enough to look like a sentence.',
         now() - ($2::int - x.seq) * interval '10 milliseconds'
       from slots x join members m on m.group_id = x.group_id and m.rn = (x.i + x.group_id) % m.n
       order by x.seq`,
      [perGroup, seededCount, groupIds, WIDE_MESSAGES_PER_GROUP],
    )
    await sql.query(`
      update chat_groups g set member_count = c.n
      from (select group_id, count(*)::int as n from chat_group_members group by group_id) c
      where c.group_id = g.id`)
    await sql.query(`
      update chat_groups g set last_message_id = l.id, last_activity_at = l.created_at
      from (select distinct on (group_id) group_id, id, created_at from chat_messages order by group_id, id desc) l
      where l.group_id = g.id`)
    // Every other group of the readers is read to the end; elsewhere markers lie up to UNREAD_SPREAD back.
    await sql.query(
      `update chat_group_members m set last_read_message_id = coalesce((
         select x.id from chat_messages x where x.group_id = m.group_id order by x.id desc
         offset (case when m.user_id = any($1::bigint[]) and m.group_id % 2 = 0 then 0 else (m.user_id + m.group_id) % $2 end)
         limit 1), 0)`,
      [[reader.userId, wide?.userId ?? reader.userId], UNREAD_SPREAD],
    )
    await sql.query(`
      update chat_groups g set conversation_count = (
        select count(*)::int from chat_messages x where x.group_id = g.id and x.kind <> 'system')`)
    await sql.query(`
      update chat_group_members m set read_count = g.conversation_count - (
        select count(*)::int from chat_messages x
        where x.group_id = m.group_id and x.id > m.last_read_message_id and x.kind <> 'system'
          and x.user_id is distinct from m.user_id)
      from chat_groups g where g.id = m.group_id`)
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
    const profiler = CPU_PROFILE ? new InspectorSession() : undefined
    if (profiler) {
      profiler.connect()
      await profiler.post('Profiler.enable')
      await profiler.post('Profiler.start')
    }
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
    if (profiler && CPU_PROFILE) {
      const { profile } = await profiler.post('Profiler.stop')
      writeFileSync(CPU_PROFILE, JSON.stringify(profile))
      profiler.disconnect()
    }

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
      select 'the unread count differs from the messages after the read marker', count(*)::text
        from chat_group_members m join chat_groups g on g.id = m.group_id
        where g.conversation_count - m.read_count <> (select count(*) from chat_messages x
          where x.group_id = m.group_id and x.id > m.last_read_message_id and x.kind <> 'system'
            and x.user_id is distinct from m.user_id)
    `)
    const failed = problems.rows.filter((row) => row.n !== '0')
    const consistent = failed.length === 0 && stored === posting.succeeded

    // (d) room size: the same posts to a group of BIG_ROOM members and to one of SMALL_ROOM.
    const roomPosters: Session[] = new Array(2 * ROOM_POSTERS)
    await inParallel(2 * ROOM_POSTERS, 4, async (i) => {
      roomPosters[i] = await newSession(`bench-room-${i}@example.com`, `Bench room ${i}`)
    })
    const rooms: { members: number; posters: Session[]; latencies: number[] }[] = []
    for (const [r, members] of [BIG_ROOM, SMALL_ROOM].entries()) {
      const posters = roomPosters.slice(r * ROOM_POSTERS, (r + 1) * ROOM_POSTERS)
      const owner = posters[0] as Session
      const room = await expect(201, 'POST', '/api/group', owner, { name: `Bench room of ${members}` })
      for (const poster of posters) {
        poster.groupId = room.data.id
        if (poster !== owner) await expect(200, 'POST', `/api/group/${room.data.id}/join`, poster)
      }
      // The silent members, set-based: users who never sign in.
      await sql.query(
        `with silent as (
           insert into users (name, email, password, email_verified_at, created_at, updated_at)
           select 'Silent ' || $1::bigint || '.' || s.i, 'silent-' || $1::bigint || '-' || s.i || '@example.com',
             'x', now(), now(), now()
           from generate_series(1, $2::int) s(i) returning id)
         insert into chat_group_members (group_id, user_id, role, last_read_message_id, read_count, joined_at)
         select $1::bigint, id, 'member', 0, 0, now() from silent`,
        [room.data.id, members - posters.length],
      )
      await sql.query(
        `update chat_groups set member_count = (select count(*) from chat_group_members where group_id = $1) where id = $1`,
        [room.data.id],
      )
      rooms.push({ members, posters, latencies: [] })
    }
    await sql.query('vacuum analyze chat_group_members, chat_groups, users')
    for (let n = 0; n < ROOM_POSTERS * ROOM_POSTS_EACH; n++) {
      for (const room of rooms) {
        const poster = room.posters[n % ROOM_POSTERS] as Session
        const res = await call('POST', '/api/message', poster, {
          group_id: poster.groupId,
          body: `Room bench message ${n}.`,
        })
        if (res.status !== 201) throw new Error(`POST /api/message answered ${res.status}: ${res.text}`)
        room.latencies.push(res.ms)
      }
    }
    for (const room of rooms) room.latencies.sort((a, b) => a - b)
    const [big, small] = rooms as [(typeof rooms)[number], (typeof rooms)[number]]
    const roomRatio = percentile(big.latencies, 50) / percentile(small.latencies, 50)

    // (c) the reader's sidebar, against the reader's baseline read, both with autocannon.
    const readerHeaders = { cookie: reader.headers.cookie ?? '', accept: 'application/json' }
    const sidebarOf = async (session: Session) => {
      const res = await call('GET', '/api/sidebar-conversations', session)
      if (res.status !== 200) throw new Error(`GET /api/sidebar-conversations answered ${res.status}`)
      const conversations = (JSON.parse(res.text) as { data: { unread_count: number }[] }).data
      const unread = conversations.filter((c) => c.unread_count > 0)
      return {
        bytes: res.text.length,
        groups: conversations.length,
        withUnread: unread.length,
        unread: unread.reduce((sum, c) => sum + c.unread_count, 0),
      }
    }
    const sample = await sidebarOf(reader)
    const wideSample = wide ? await sidebarOf(wide) : null
    await http.close()
    const readerBaseline = await load(`${appUrl}/api/credits`, readerHeaders)
    const sidebar = await load(`${appUrl}/api/sidebar-conversations`, readerHeaders)
    const wideSidebar = wide
      ? await load(`${appUrl}/api/sidebar-conversations`, {
          cookie: wide.headers.cookie ?? '',
          accept: 'application/json',
        })
      : null

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
      `setup: ${POSTERS + 1 + (wide ? 1 : 0)} users signed in, ${READER_GROUPS} groups, ${2 * POSTERS} joins over HTTP` +
        `${wide ? ` (and ${wideOnly} groups set-based)` : ''} in ${setupSeconds.toFixed(1)} s; ` +
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
      `(c) reader in ${sample.groups} groups (${sample.withUnread} with unread, ${sample.unread} unread), sidebar answer ${sample.bytes} bytes; autocannon, ${SIDEBAR_CONNECTIONS} connection(s), ${SIDEBAR_SECONDS} s each`,
    )
    console.log(row(`    baseline GET /api/credits`, readerBaseline))
    console.log(row(`    GET /api/sidebar-conversations`, sidebar))
    console.log(
      `    sidebar p99 ${sidebar.p99} ms (target <= ${SIDEBAR_TARGET_MS} ms: ${sidebar.p99 <= SIDEBAR_TARGET_MS ? 'met' : 'NOT met'}); ratio to baseline ${(sidebar.rate / readerBaseline.rate).toFixed(2)} (req/s)`,
    )
    if (wideSample && wideSidebar) {
      console.log(
        `    wide reader in ${wideSample.groups} groups (${wideSample.withUnread} with unread, ${wideSample.unread} unread), sidebar answer ${wideSample.bytes} bytes`,
      )
      console.log(row(`    GET /api/sidebar-conversations`, wideSidebar))
    }
    console.log(
      `(d) ${ROOM_POSTERS * ROOM_POSTS_EACH} posts to each of a ${BIG_ROOM}-member and a ${SMALL_ROOM}-member group, alternately, one at a time: ` +
        `p50 ${percentile(big.latencies, 50).toFixed(2)} ms against ${percentile(small.latencies, 50).toFixed(2)} ms, ` +
        `p99 ${percentile(big.latencies, 99).toFixed(2)} ms against ${percentile(small.latencies, 99).toFixed(2)} ms`,
    )
    const postRatio = posting.succeeded / posting.seconds / (baseline.ops / baseline.seconds)
    const targets = createTargets()
    targets.check('chat-post', postRatio, '>=', POST_RATIO_GOAL, { label: 'b/a' })
    targets.check('chat-post-room-size', roomRatio, '<=', ROOM_RATIO_GOAL, {
      label: `p50 ${BIG_ROOM} / ${SMALL_ROOM} members`,
    })
    targets.check(`chat-sidebar-${READER_GROUPS}-groups`, sidebar.p99, '<=', SIDEBAR_TARGET_MS, {
      label: 'p99',
      unit: ' ms',
      digits: 1,
    })
    if (wideSample && wideSidebar) {
      targets.check(`chat-sidebar-${wideSample.groups}-groups`, wideSidebar.p99, '<=', SIDEBAR_TARGET_MS, {
        label: 'p99',
        unit: ' ms',
        digits: 1,
      })
    }
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
      ...(wideSample && wideSidebar ? { wideSidebar: { ...wideSidebar, groups: wideSample.groups } } : {}),
      sidebarTargetMs: SIDEBAR_TARGET_MS,
      rooms: {
        big: { members: BIG_ROOM, p50: percentile(big.latencies, 50), p99: percentile(big.latencies, 99) },
        small: {
          members: SMALL_ROOM,
          p50: percentile(small.latencies, 50),
          p99: percentile(small.latencies, 99),
        },
        ratio: roomRatio,
      },
      targets: targets.results,
    })
    if (json) console.log(`figures written to ${json}`)
    const clean = (f: Figures) => f.non2xx === 0 && f.errors === 0
    if (
      !consistent ||
      posting.errors > 0 ||
      baseline.errors > 0 ||
      !clean(sidebar) ||
      (wideSidebar !== null && !clean(wideSidebar)) ||
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
