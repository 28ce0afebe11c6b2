import { randomBytes } from 'node:crypto'
import { buildApp } from './app.ts'
import { ConfigError, loadConfig, withUpstream } from './config.ts'
import { type RunningSimulator, startUpstreamSimulator } from './upstream-sim/server.ts'

// Process entry: configuration, the app, listen, and a graceful stop. Nothing else.
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
  simulator = await startUpstreamSimulator({ port: 0, token })
  config = withUpstream(config, simulator.url, token)
}

const app = await buildApp(config)
if (simulator) app.log.info({ url: simulator.url }, `upstream simulator running at ${simulator.url}`)

let stopping = false
async function stop(signal: string) {
  if (stopping) return
  stopping = true
  app.log.info({ signal }, 'stopping: finishing in-flight requests')
  // close() stops accepting, waits for in-flight requests, then runs onClose (the database closes).
  const timer = setTimeout(() => {
    app.log.error('in-flight requests did not finish within 25 s; exiting')
    process.exit(1)
  }, 25_000)
  timer.unref()
  await app.close()
  await simulator?.close()
  process.exit(0)
}
process.on('SIGTERM', () => void stop('SIGTERM'))
process.on('SIGINT', () => void stop('SIGINT'))

await app.listen({ host: config.host, port: config.port })
