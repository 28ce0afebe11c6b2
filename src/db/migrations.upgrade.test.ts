import { cpSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs'
import os from 'node:os'
import { join } from 'node:path'
import { fileURLToPath } from 'node:url'
import { PGlite } from '@electric-sql/pglite'
import { drizzle } from 'drizzle-orm/pglite'
import { migrate } from 'drizzle-orm/pglite/migrator'
import { afterAll, describe, expect, it } from 'vitest'

/**
 * Upgrades of a database that holds data: the committed migrations up to one, rows written as that
 * release wrote them, then the rest, as the release step runs them on a live database.
 */

const committed = fileURLToPath(new URL('../../drizzle', import.meta.url))
const folders: string[] = []
afterAll(() => {
  for (const folder of folders) rmSync(folder, { recursive: true, force: true })
})

/** The committed migrations folder as it stood at migration `lastIdx`. */
function migrationsUpTo(lastIdx: number): string {
  const folder = mkdtempSync(join(os.tmpdir(), 'migrations-'))
  folders.push(folder)
  cpSync(committed, folder, { recursive: true })
  const journalPath = join(folder, 'meta', '_journal.json')
  const journal = JSON.parse(readFileSync(journalPath, 'utf8')) as { entries: { idx: number }[] }
  journal.entries = journal.entries.filter((entry) => entry.idx <= lastIdx)
  writeFileSync(journalPath, JSON.stringify(journal))
  return folder
}

describe('0010: chat unread counts as conversation_count - read_count', () => {
  it('keeps every member’s unread count, system messages not counted', async () => {
    const client = new PGlite()
    try {
      const db = drizzle({ client })
      await migrate(db, { migrationsFolder: migrationsUpTo(9) })
      await client.exec(`
        insert into users (id, name, email, password) values
          (1, 'Owner', 'owner@example.com', 'x'), (2, 'Reader', 'reader@example.com', 'x'),
          (3, 'Behind', 'behind@example.com', 'x');
        insert into chat_groups (id, name, owner_id, member_count, last_activity_at, created_at, updated_at) values
          (1, 'Busy', 1, 3, now(), now(), now()), (2, 'Quiet', 1, 1, now(), now(), now());
        insert into chat_messages (group_id, user_id, kind, body, created_at) values
          (1, null, 'system', 'Owner created the group', now()),
          (1, 1, 'text', 'one', now()), (1, 1, 'text', 'two', now()), (1, 2, 'text', 'three', now()),
          (1, 1, 'text', 'four', now()), (1, null, 'system', 'Behind joined', now());
        -- As the previous release kept them: each member's own counter.
        insert into chat_group_members (group_id, user_id, role, unread_count, joined_at) values
          (1, 1, 'owner', 0, now()), (1, 2, 'member', 1, now()), (1, 3, 'member', 4, now()),
          (2, 1, 'owner', 0, now());
      `)
      await migrate(db, { migrationsFolder: committed })

      const { rows: groups } = await client.query<{ id: number; conversation_count: number }>(
        'select id::int, conversation_count from chat_groups order by id',
      )
      expect(groups).toEqual([
        { id: 1, conversation_count: 4 },
        { id: 2, conversation_count: 0 },
      ])
      const { rows: members } = await client.query<{ group_id: number; user_id: number; unread: number }>(
        `select m.group_id::int, m.user_id::int, g.conversation_count - m.read_count as unread
         from chat_group_members m join chat_groups g on g.id = m.group_id order by m.group_id, m.user_id`,
      )
      expect(members).toEqual([
        { group_id: 1, user_id: 1, unread: 0 },
        { group_id: 1, user_id: 2, unread: 1 },
        { group_id: 1, user_id: 3, unread: 4 },
        { group_id: 2, user_id: 1, unread: 0 },
      ])
    } finally {
      await client.close()
    }
  })
})
