import { randomBytes } from 'node:crypto'
import { existsSync, mkdirSync, readFileSync, writeFileSync } from 'node:fs'
import { join } from 'node:path'

/** The socket app's credentials (REVERB_APP_ID, REVERB_APP_KEY, REVERB_APP_SECRET). */
export interface ReverbApp {
  appId: string
  key: string
  secret: string
}

/** Where the secrets left unset outside production come from (config.ts asks only for those it lacks). */
export interface GeneratedKeys {
  appKey(dataDir: string): string
  reverbApp(dataDir: string): ReverbApp
}

/** A fresh random APP_KEY in Laravel's `base64:` form. */
export function generateAppKey(): string {
  return `base64:${randomBytes(32).toString('base64')}`
}

/** APP_KEY outside production: generated once, then read back from DATA_DIR so sessions survive restarts. */
export function ensureAppKey(dataDir: string): string {
  const file = join(dataDir, 'app-key')
  if (existsSync(file)) return readFileSync(file, 'utf8').trim()
  mkdirSync(dataDir, { recursive: true })
  const key = generateAppKey()
  writeFileSync(file, `${key}\n`, { mode: 0o600 })
  return key
}

/** The socket app's credentials outside production: generated once, then read back from DATA_DIR. */
export function ensureReverbApp(dataDir: string): ReverbApp {
  const file = join(dataDir, 'reverb-app.json')
  if (existsSync(file)) return JSON.parse(readFileSync(file, 'utf8')) as ReverbApp
  mkdirSync(dataDir, { recursive: true })
  const app: ReverbApp = {
    appId: String(100_000 + (randomBytes(4).readUInt32BE() % 900_000)),
    key: randomBytes(10).toString('hex'),
    secret: randomBytes(20).toString('hex'),
  }
  writeFileSync(file, `${JSON.stringify(app)}\n`, { mode: 0o600 })
  return app
}

/** The keys files under DATA_DIR, each created the first time it is asked for. */
export const keysInDataDir: GeneratedKeys = Object.freeze({
  appKey: ensureAppKey,
  reverbApp: ensureReverbApp,
})
