import { sql } from 'drizzle-orm'
import type { Db } from '../../src/db/client.ts'

/**
 * Makes the database refuse to queue mail (an outbox row) to the addresses given to `refuse`, as a
 * failing disk or a dropped connection would at that moment. A change whose mail is queued in its
 * own transaction then does not happen either. Installs a trigger on the test database's outbox
 * (once per database; it refuses nothing until an address is named).
 */
export async function mailRefusal(db: Db) {
  await db.execute(sql`create table if not exists test_refused_mail (address text primary key)`)
  await db.execute(sql`
    create or replace function test_refuse_mail() returns trigger language plpgsql as $$
    begin
      if exists (select 1 from test_refused_mail where address = lower(new.payload->>'to')) then
        raise exception 'test: mail to % refused', new.payload->>'to';
      end if;
      return new;
    end $$`)
  await db.execute(sql`drop trigger if exists test_refuse_mail on outbox`)
  await db.execute(
    sql`create trigger test_refuse_mail before insert on outbox for each row execute function test_refuse_mail()`,
  )
  return {
    refuse: async (address: string) => {
      await db.execute(
        sql`insert into test_refused_mail (address) values (lower(${address})) on conflict do nothing`,
      )
    },
    allow: async (address: string) => {
      await db.execute(sql`delete from test_refused_mail where address = lower(${address})`)
    },
  }
}
