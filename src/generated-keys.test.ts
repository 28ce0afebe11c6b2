import { existsSync, mkdtempSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { afterEach, describe, expect, test } from 'vitest'
import { ConfigError, parseConfig } from './config.ts'
import type { GeneratedKeys } from './generated-keys.ts'

const APP_KEY = 'base64:dGVzdC1hcHAta2V5LXRlc3QtYXBwLWtleS10ZXN0LWE='
const dirs: string[] = []
afterEach(() => {
  for (const dir of dirs.splice(0)) rmSync(dir, { recursive: true, force: true })
})

/** Keys from memory, recording which were asked for. */
function keysInMemory(): GeneratedKeys & { asked: string[] } {
  const asked: string[] = []
  return {
    asked,
    appKey: () => {
      asked.push('appKey')
      return APP_KEY
    },
    reverbApp: () => {
      asked.push('reverbApp')
      return { appId: '1', key: 'k', secret: 's'.repeat(16) }
    },
  }
}

describe('parseConfig', () => {
  test('writes nothing: the secrets left unset come from the keys handed in, asked only for those', () => {
    const cwd = mkdtempSync(join(tmpdir(), 'trading-api-keys-'))
    dirs.push(cwd)
    const keys = keysInMemory()
    const config = parseConfig({}, cwd, keys)
    expect(config.appKey).toBe(APP_KEY)
    expect(config.realtime).toMatchObject({ appId: '1', key: 'k' })
    expect(keys.asked).toEqual(['appKey', 'reverbApp'])
    expect(existsSync(join(cwd, 'storage'))).toBe(false)

    const given = keysInMemory()
    parseConfig(
      { APP_KEY, REVERB_APP_ID: '2', REVERB_APP_KEY: 'k2', REVERB_APP_SECRET: 'x'.repeat(16) },
      cwd,
      given,
    )
    expect(given.asked).toEqual([])
  })

  test('an invalid environment asks for no key', () => {
    const keys = keysInMemory()
    expect(() => parseConfig({ PORT: 'abc' }, tmpdir(), keys)).toThrow(ConfigError)
    expect(keys.asked).toEqual([])
  })
})
