import type { FastifyInstance } from 'fastify'
import fp from 'fastify-plugin'
import type { Database, Db } from '../db/client.ts'

declare module 'fastify' {
  interface FastifyInstance {
    db: Db
    database: Database
  }
}

/** Hands the opened database to every module; closing the app closes it. */
async function dbPlugin(app: FastifyInstance, { database }: { database: Database }) {
  app.decorate('database', database)
  app.decorate('db', database.db)
  app.addHook('onClose', () => database.close())
}

export default fp(dbPlugin, { name: 'db' })
