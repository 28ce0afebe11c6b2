import { encryptLaravel, type LaravelCipherMode } from '../../src/lib/laravel-compat/encrypter.ts'
import { type PhpSerializable, serializePhp } from '../../src/lib/laravel-compat/php-serialize.ts'

// The Laravel original's database as its migrations make it: Laravel 11's default migrations
// (users, password_reset_tokens, sessions), Fortify's two-factor columns, Jetstream's
// profile_photo_path and the app's is_admin, in the SQL each of Laravel's schema grammars writes.

export type LaravelDialect = 'sqlite' | 'postgres' | 'mariadb'

export const LARAVEL_SCHEMA: Record<LaravelDialect, string[]> = {
  sqlite: [
    'create table "users" ("id" integer primary key autoincrement not null, "name" varchar not null, "email" varchar not null, "email_verified_at" datetime, "password" varchar not null, "remember_token" varchar, "created_at" datetime, "updated_at" datetime, "two_factor_secret" text, "two_factor_recovery_codes" text, "two_factor_confirmed_at" datetime, "profile_photo_path" varchar, "is_admin" tinyint(1) not null default \'0\')',
    'create unique index "users_email_unique" on "users" ("email")',
    'create table "password_reset_tokens" ("email" varchar not null, "token" varchar not null, "created_at" datetime, primary key ("email"))',
    'create table "sessions" ("id" varchar not null, "user_id" integer, "ip_address" varchar, "user_agent" text, "payload" text not null, "last_activity" integer not null, primary key ("id"))',
    'create index "sessions_user_id_index" on "sessions" ("user_id")',
    'create index "sessions_last_activity_index" on "sessions" ("last_activity")',
  ],
  postgres: [
    'create table "users" ("id" bigserial not null primary key, "name" varchar(255) not null, "email" varchar(255) not null, "email_verified_at" timestamp(0) without time zone null, "password" varchar(255) not null, "remember_token" varchar(100) null, "created_at" timestamp(0) without time zone null, "updated_at" timestamp(0) without time zone null, "two_factor_secret" text null, "two_factor_recovery_codes" text null, "two_factor_confirmed_at" timestamp(0) without time zone null, "profile_photo_path" varchar(2048) null, "is_admin" boolean not null default \'0\')',
    'alter table "users" add constraint "users_email_unique" unique ("email")',
    'create table "password_reset_tokens" ("email" varchar(255) not null, "token" varchar(255) not null, "created_at" timestamp(0) without time zone null)',
    'alter table "password_reset_tokens" add primary key ("email")',
    'create table "sessions" ("id" varchar(255) not null, "user_id" bigint null, "ip_address" varchar(45) null, "user_agent" text null, "payload" text not null, "last_activity" integer not null)',
    'alter table "sessions" add primary key ("id")',
    'create index "sessions_user_id_index" on "sessions" ("user_id")',
    'create index "sessions_last_activity_index" on "sessions" ("last_activity")',
  ],
  mariadb: [
    "create table `users` (`id` bigint unsigned not null auto_increment primary key, `name` varchar(255) not null, `email` varchar(255) not null, `email_verified_at` timestamp null, `password` varchar(255) not null, `remember_token` varchar(100) null, `created_at` timestamp null, `updated_at` timestamp null, `two_factor_secret` text null, `two_factor_recovery_codes` text null, `two_factor_confirmed_at` timestamp null, `profile_photo_path` varchar(2048) null, `is_admin` tinyint(1) not null default '0') default character set utf8mb4 collate 'utf8mb4_unicode_ci'",
    'alter table `users` add unique `users_email_unique`(`email`)',
    "create table `password_reset_tokens` (`email` varchar(255) not null, `token` varchar(255) not null, `created_at` timestamp null, primary key (`email`)) default character set utf8mb4 collate 'utf8mb4_unicode_ci'",
    "create table `sessions` (`id` varchar(255) not null, `user_id` bigint unsigned null, `ip_address` varchar(45) null, `user_agent` text null, `payload` longtext not null, `last_activity` int not null, primary key (`id`)) default character set utf8mb4 collate 'utf8mb4_unicode_ci'",
    'alter table `sessions` add index `sessions_user_id_index`(`user_id`)',
    'alter table `sessions` add index `sessions_last_activity_index`(`last_activity`)',
  ],
}

export type Row = Record<string, string | number | boolean | null>

const placeholders = (dialect: LaravelDialect, count: number, offset: number) =>
  Array.from({ length: count }, (_, i) => (dialect === 'postgres' ? `$${offset + i + 1}` : '?')).join(', ')

/** One multi-row insert statement (with its parameters) per table and batch. */
export function insertStatement(dialect: LaravelDialect, table: string, rows: Row[]): [string, unknown[]] {
  const columns = Object.keys(rows[0] ?? {})
  const params: unknown[] = []
  const values = rows.map((row) => {
    const group = `(${placeholders(dialect, columns.length, params.length)})`
    for (const column of columns) {
      const value = row[column] ?? null
      // PostgreSQL's is_admin is a boolean; MySQL's and SQLite's a 0/1 integer.
      params.push(typeof value === 'boolean' && dialect !== 'postgres' ? Number(value) : value)
    }
    return group
  })
  return [`insert into ${table} (${columns.join(', ')}) values ${values.join(', ')}`, params]
}

/** What Laravel's `encrypt($value)` stores: the encrypter's payload of the serialized value. */
export const laravelEncrypt = (value: PhpSerializable, key: string, mode: LaravelCipherMode = 'cbc') =>
  encryptLaravel(serializePhp(value), key, { mode })

/** A `sessions.payload` as the database session driver writes it: base64 of the serialized attributes. */
export const laravelSessionPayload = (attributes: Record<string, PhpSerializable>) =>
  Buffer.from(serializePhp(attributes), 'utf8').toString('base64')

/** A timestamp as Laravel writes it (`Y-m-d H:i:s`, UTC). */
export const laravelTimestamp = (date: Date) => date.toISOString().slice(0, 19).replace('T', ' ')
