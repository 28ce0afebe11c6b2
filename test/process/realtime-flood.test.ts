import { afterAll, afterEach, describe, expect, it } from 'vitest'
import { parseSamples, type Sample, sampleValue } from '../helpers/prometheus.ts'
import { PusherSocket } from '../helpers/pusher-socket.ts'
import {
  killServerProcesses,
  migratedDataDir,
  removeTempDirs,
  startServerProcess,
} from '../helpers/server-process.ts'

// Issue 25: 150,000 subscriptions from one anonymous socket grew an instance by 270 MB in seconds,
// and some 500,000 killed one. The server runs as its own process here, so its heap is its alone.

const METRICS_TOKEN = 'flood-test-metrics-token-0123456789'
const REVERB = {
  REVERB_APP_ID: '4242',
  REVERB_APP_KEY: 'flood-key',
  REVERB_APP_SECRET: 'a-secret-of-twenty-chars',
}

afterEach(() => killServerProcesses())
afterAll(() => removeTempDirs())

async function scrape(baseUrl: string): Promise<Sample[]> {
  const answer = await fetch(`${baseUrl}/metrics`, { headers: { authorization: `Bearer ${METRICS_TOKEN}` } })
  expect(answer.status).toBe(200)
  return parseSamples(await answer.text())
}

/** How long GET /up takes to answer 200. */
async function upWithin(baseUrl: string): Promise<number> {
  const started = Date.now()
  const answer = await fetch(`${baseUrl}/up`)
  expect(answer.status).toBe(200)
  return Date.now() - started
}

describe('node src/server.ts flooded with subscriptions by one socket (default limits)', () => {
  it('holds 100 of 150,000 subscriptions, keeps its heap within 64 MB of where it was, and answers /up', async () => {
    const server = await startServerProcess({
      env: { DATA_DIR: migratedDataDir(), METRICS_TOKEN, LOG_LEVEL: 'warn', ...REVERB },
    })
    const socket = await PusherSocket.open(server.baseUrl, REVERB.REVERB_APP_KEY)
    const heapBefore = sampleValue(await scrape(server.baseUrl), 'nodejs_heap_size_used_bytes')

    // Long names (up to the 164 allowed), so each subscription held would cost the most.
    for (let i = 0; i < 150_000; i++) {
      socket.send('pusher:subscribe', { channel: `flood-${i}-${'x'.repeat(140)}` })
      if (i % 10_000 === 0) await new Promise((resolve) => setImmediate(resolve))
    }
    // While the frames arrive, the instance keeps answering.
    expect(await upWithin(server.baseUrl)).toBeLessThan(2000)
    while (socket.ws.bufferedAmount > 0) await new Promise((resolve) => setTimeout(resolve, 50))

    // The rate window (10 s) ends, then a ping is answered: every frame before it has been handled.
    await new Promise((resolve) => setTimeout(resolve, 10_500))
    const from = socket.mark()
    socket.send('pusher:ping')
    await socket.waitFor((f) => f.event === 'pusher:pong', 5000, from)

    const samples = await scrape(server.baseUrl)
    expect(sampleValue(samples, 'trading_api_realtime_subscriptions')).toBe(100)
    expect(sampleValue(samples, 'nodejs_heap_size_used_bytes') - heapBefore).toBeLessThan(64 * 1024 * 1024)
    expect(socket.since(0, 'pusher_internal:subscription_succeeded')).toHaveLength(100)
    expect(socket.since(0, 'pusher:error').map((f) => f.data.code)).toEqual([...Array(20).fill(4009), 4301])
    expect(await upWithin(server.baseUrl)).toBeLessThan(2000)
    expect(socket.open).toBe(true)
    socket.close()
  }, 90_000)
})
