import type { FastifyInstance } from 'fastify'
import fp from 'fastify-plugin'
import type { Config } from '../config.ts'
import { createLocalStorage } from '../lib/storage/local.ts'
import type { FileStorage } from '../lib/storage/storage.ts'

declare module 'fastify' {
  interface FastifyInstance {
    /** Uploaded files (profile photos, chat attachments). */
    storage: FileStorage
  }
}

/**
 * The configured storage: the local disk under DATA_DIR (uploads live in DATA_DIR's own folders), or
 * with STORAGE_DRIVER=s3 an S3-compatible bucket that every instance shares. `close` ends its
 * connections (nothing for the disk). The CLI opens it the same way.
 */
export async function openConfiguredStorage(
  config: Config,
): Promise<{ storage: FileStorage; close(): void }> {
  if (config.storage.driver === 'local')
    return { storage: createLocalStorage(config.dataDir), close: () => {} }
  // The AWS SDK is large: loaded only when chosen, so a start on the local disk does not pay for it.
  const { createS3Storage } = await import('../lib/storage/s3.ts')
  const storage = createS3Storage(config.storage.s3)
  return { storage, close: () => storage.close() }
}

/** `app.storage`: the configured storage (openConfiguredStorage). */
async function storagePlugin(app: FastifyInstance, { config }: { config: Config }) {
  const { storage, close } = await openConfiguredStorage(config)
  app.decorate('storage', storage)
  app.addHook('onClose', async () => close())
}

export default fp(storagePlugin, { name: 'storage' })
