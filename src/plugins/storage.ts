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
 * `app.storage`: the local disk under DATA_DIR (uploads live in DATA_DIR's own folders), or with
 * STORAGE_DRIVER=s3 an S3-compatible bucket that every instance shares.
 */
async function storagePlugin(app: FastifyInstance, { config }: { config: Config }) {
  if (config.storage.driver === 'local') {
    app.decorate('storage', createLocalStorage(config.dataDir))
    return
  }
  // The AWS SDK is large: loaded only when chosen, so a start on the local disk does not pay for it.
  const { createS3Storage } = await import('../lib/storage/s3.ts')
  const storage = createS3Storage(config.storage.s3)
  app.decorate('storage', storage)
  app.addHook('onClose', async () => storage.close())
}

export default fp(storagePlugin, { name: 'storage' })
