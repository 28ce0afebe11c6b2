import { readFileSync } from 'node:fs'

/** uid and gid of a system account, from /etc/passwd. */
export function systemAccount(name: string): { uid: number; gid: number } {
  const line = readFileSync('/etc/passwd', 'utf8')
    .split('\n')
    .find((entry) => entry.startsWith(`${name}:`))
  const [, , uid, gid] = line?.split(':') ?? []
  if (uid === undefined || gid === undefined) throw new Error(`no ${name} account in /etc/passwd`)
  return { uid: Number(uid), gid: Number(gid) }
}

/** Under root, the account a server that refuses root (PostgreSQL, PgBouncer) runs as; otherwise none. */
export function unprivilegedAccount(name: string): { uid: number; gid: number } | undefined {
  return process.getuid?.() === 0 ? systemAccount(name) : undefined
}
