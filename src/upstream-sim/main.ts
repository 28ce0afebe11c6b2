import { pino } from 'pino'
import { ConfigError, loadConfig } from '../config.ts'
import { startUpstreamSimulator } from './server.ts'

// `npm run upstream:sim`: the simulated upstream on its own, on UPSTREAM_SIM_PORT (default 8100).
let config: ReturnType<typeof loadConfig>
try {
  config = loadConfig()
} catch (error) {
  if (!(error instanceof ConfigError)) throw error
  console.error(error.message)
  process.exit(1)
}
if (!config.upstream.token) {
  console.error('UPSTREAM_API_TOKEN: required; the simulator accepts only calls bearing this token')
  process.exit(1)
}

const logger = pino({ level: config.logLevel })
const simulator = await startUpstreamSimulator({
  port: config.upstream.simulatorPort,
  host: config.host,
  token: config.upstream.token,
  logger,
})
logger.info({ url: simulator.url }, `upstream simulator running at ${simulator.url}`)

async function stop(signal: string) {
  logger.info({ signal }, 'upstream simulator stopping')
  await simulator.close()
  process.exit(0)
}
process.on('SIGTERM', () => void stop('SIGTERM'))
process.on('SIGINT', () => void stop('SIGINT'))
