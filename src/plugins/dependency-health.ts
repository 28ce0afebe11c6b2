import type { FastifyInstance } from 'fastify'
import fp from 'fastify-plugin'
import { createDependencyHealth, type Dependency, type DependencyHealth } from '../lib/dependency-health.ts'

declare module 'fastify' {
  interface FastifyInstance {
    /** Whether PostgreSQL, Redis and the upstream answer, as their uses find out (lib/dependency-health.ts). */
    dependencyHealth: DependencyHealth
  }
}

/** `app.dependencyHealth`, and `dependency_up{dependency}` (1 or 0) for each dependency this instance uses. */
async function dependencyHealthPlugin(app: FastifyInstance, { used }: { used: readonly Dependency[] }) {
  const health = createDependencyHealth(used, app.log, () => app.clock.nowMs())
  app.decorate('dependencyHealth', health)
  app.metrics.gauge({
    name: 'dependency_up',
    help: 'Whether a dependency answered its last use (1) or is down (0), by dependency.',
    labelNames: ['dependency'],
    read(set) {
      for (const dependency of used) set({ dependency }, health.isUp(dependency) ? 1 : 0)
    },
  })
}

export default fp(dependencyHealthPlugin, { name: 'dependency-health', dependencies: ['clock', 'metrics'] })
