import { buildApp } from './app.ts'
import { ConfigError, loadConfig } from './config.ts'

// Process entry: configuration, the app, listen, and a graceful stop. Nothing else.
let config: ReturnType<typeof loadConfig>
try {
  config = loadConfig()
} catch (error) {
  if (!(error instanceof ConfigError)) throw error
  console.error(error.message)
  process.exit(1)
}

const app = await buildApp(config)

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
  process.exit(0)
}
process.on('SIGTERM', () => void stop('SIGTERM'))
process.on('SIGINT', () => void stop('SIGINT'))

await app.listen({ host: config.host, port: config.port })
