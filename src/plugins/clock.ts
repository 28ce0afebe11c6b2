import type { FastifyInstance } from 'fastify'
import fp from 'fastify-plugin'
import type { Clock } from '../lib/clock.ts'

declare module 'fastify' {
  interface FastifyInstance {
    clock: Clock
  }
}

async function clockPlugin(app: FastifyInstance, { clock }: { clock: Clock }) {
  app.decorate('clock', clock)
}

export default fp(clockPlugin, { name: 'clock' })
