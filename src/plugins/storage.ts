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

/** `app.storage`: the local disk under DATA_DIR (uploads live in DATA_DIR's own folders). */
async function storagePlugin(app: FastifyInstance, { config }: { config: Config }) {
  app.decorate('storage', createLocalStorage(config.dataDir))
}

export default fp(storagePlugin, { name: 'storage' })
