import { mkdtempSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { afterAll, describe, expect, it } from 'vitest'
import { ConfigError, loadConfig } from '../config.ts'

// STORAGE_DRIVER and S3_* as config.ts reads them (the plugin's choice follows config.storage).
const cwd = mkdtempSync(join(tmpdir(), 'trading-api-storage-config-'))
afterAll(() => rmSync(cwd, { recursive: true, force: true }))
const APP_KEY = 'base64:dGVzdC1hcHAta2V5LXRlc3QtYXBwLWtleS10ZXN0LWE='
const SECRET = 'wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEY'
const load = (env: Record<string, string>) => loadConfig({ APP_KEY, ...env }, cwd)

function problems(env: Record<string, string>): ConfigError {
  try {
    load(env)
  } catch (error) {
    if (error instanceof ConfigError) return error
    throw error
  }
  throw new Error('loadConfig accepted the environment')
}

describe('storage configuration', () => {
  it('is the local disk by default, and when asked for', () => {
    expect(load({}).storage).toEqual({ driver: 'local' })
    expect(load({ STORAGE_DRIVER: 'local', S3_BUCKET: 'ignored' }).storage).toEqual({ driver: 'local' })
  })

  it('reads a bucket on an S3-compatible server', () => {
    const config = load({
      STORAGE_DRIVER: 's3',
      S3_BUCKET: 'trading-uploads',
      S3_ENDPOINT: 'http://minio.internal:9000/',
      S3_REGION: 'eu-west-3',
      S3_ACCESS_KEY_ID: 'AKIAEXAMPLE',
      S3_SECRET_ACCESS_KEY: SECRET,
      S3_FORCE_PATH_STYLE: '1',
      S3_PREFIX: '/prod/uploads/',
    })
    expect(config.storage).toEqual({
      driver: 's3',
      s3: {
        bucket: 'trading-uploads',
        endpoint: 'http://minio.internal:9000',
        region: 'eu-west-3',
        credentials: { accessKeyId: 'AKIAEXAMPLE', secretAccessKey: SECRET },
        forcePathStyle: true,
        prefix: 'prod/uploads',
      },
    })
    expect(Object.isFrozen(config.storage)).toBe(true)
  })

  it('defaults to AWS in us-east-1, virtual-host style, no prefix, and the SDK’s own credentials', () => {
    expect(load({ STORAGE_DRIVER: 's3', S3_BUCKET: 'uploads' }).storage).toEqual({
      driver: 's3',
      s3: {
        bucket: 'uploads',
        endpoint: undefined,
        region: 'us-east-1',
        credentials: undefined,
        forcePathStyle: false,
        prefix: '',
      },
    })
  })

  it.each([
    [{ STORAGE_DRIVER: 's3' }, 'S3_BUCKET: required when STORAGE_DRIVER=s3'],
    [{ STORAGE_DRIVER: 'gcs' }, 'STORAGE_DRIVER: must be "local" (the default) or "s3"'],
    // A bucket with no driver chosen: most likely STORAGE_DRIVER=s3 forgotten (STORAGE_DRIVER=local is fine, above).
    [
      { S3_BUCKET: 'uploads' },
      'STORAGE_DRIVER: S3_BUCKET is set; set STORAGE_DRIVER=s3 to use it, or =local to keep uploads on disk',
    ],
    [
      { STORAGE_DRIVER: 's3', S3_BUCKET: 'uploads', S3_SECRET_ACCESS_KEY: SECRET },
      "S3_ACCESS_KEY_ID, S3_SECRET_ACCESS_KEY: set both, or neither for the AWS SDK's default credentials",
    ],
    [
      { STORAGE_DRIVER: 's3', S3_BUCKET: 'uploads', S3_PREFIX: 'a/../b' },
      'S3_PREFIX: The s3 prefix field format is invalid.',
    ],
    [
      { STORAGE_DRIVER: 's3', S3_BUCKET: 'uploads', S3_FORCE_PATH_STYLE: 'yes' },
      'S3_FORCE_PATH_STYLE: The s3 force path style field format is invalid.',
    ],
  ])('refuses %j at boot', (env, problem) => {
    expect(problems(env).problems).toEqual([problem])
  })

  it('never repeats a secret in its problems', () => {
    const error = problems({
      STORAGE_DRIVER: 's3',
      S3_ENDPOINT: 'not a url',
      S3_SECRET_ACCESS_KEY: SECRET,
    })
    expect(error.problems).toHaveLength(3)
    expect(error.message).not.toContain(SECRET)
    expect(error.message).not.toContain(SECRET.slice(0, 8))
  })
})
