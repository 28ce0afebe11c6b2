import { randomBytes } from 'node:crypto'
import { enableCompileCache, flushCompileCache } from 'node:module'
import { ConfigError, loadConfig, withUpstream } from './config.ts'
import { speedUpDrizzleImports } from './lib/fast-imports.ts'
import type { RunningSimulator } from './upstream-sim/server.ts'

// Process entry: configuration, the app, listen, and a graceful stop. Nothing else.

// Later starts reuse the compiled code (and stripped TypeScript) of every module the app loads,
// kept under the OS temp folder: NODE_COMPILE_CACHE=<dir> moves it, NODE_DISABLE_COMPILE_CACHE=1
// turns it off. A stale or unwritable cache is ignored.
enableCompileCache()

let config: ReturnType<typeof loadConfig>
try {
  config = loadConfig()
} catch (error) {
  if (!(error instanceof ConfigError)) throw error
  console.error(error.message)
  process.exit(1)
}

// No UPSTREAM_BASE_URL outside production: serve the built-in simulator in-process, on a free
// loopback port (no clash with `npm run upstream:sim` or a second instance), with a one-off token.
let simulator: RunningSimulator | undefined
if (!config.upstream.baseUrl && config.env !== 'production') {
  const token = config.upstream.token || randomBytes(24).toString('base64url')
  // Imported only here: production never loads it (nor what importing node:http from ESM costs).
  const { startUpstreamSimulator } = await import('./upstream-sim/server.ts')
  simulator = await startUpstreamSimulator({ port: 0, token })
  config = withUpstream(config, simulator.url, token)
}

// The hook goes in before the app's modules are resolved, hence app.ts imported here, not above.
speedUpDrizzleImports()
const { buildApp } = await import('./app.ts')
const app = await buildApp(config)
if (simulator) app.log.info({ url: simulator.url }, `upstream simulator running at ${simulator.url}`)

let stopping = false
async function stop(signal: string) {
  if (stopping) return
  stopping = true
  app.log.info({ signal }, 'stopping: finishing in-flight requests')
  // Not unref'd: a stop stuck on nothing that keeps the process alive still ends as a failure.
  const { timeoutMs } = config.shutdown
  setTimeout(() => {
    app.log.error({ timeoutMs }, 'the stop did not finish within SHUTDOWN_TIMEOUT_MS; exiting')
    process.exit(1)
  }, timeoutMs)
  // The sequence (draining, grace period, close) is plugins/shutdown.ts's.
  try {
    await app.shutdown.stop()
    await simulator?.close()
  } catch (error) {
    app.log.error({ err: error }, 'the stop failed; exiting')
    process.exit(1)
  }
  process.exit(0)
}
process.on('SIGTERM', () => void stop('SIGTERM'))
process.on('SIGINT', () => void stop('SIGINT'))

await app.listen({ host: config.host, port: config.port })
// Written now rather than at exit: a stop stays quick, and a killed process leaves it too.
flushCompileCache()
