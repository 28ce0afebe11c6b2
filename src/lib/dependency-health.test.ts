import { describe, expect, it } from 'vitest'
import { createDependencyHealth } from './dependency-health.ts'

function recordingLog() {
  const lines: { level: string; details: object; message: string }[] = []
  return {
    lines,
    error: (details: object, message: string) => void lines.push({ level: 'error', details, message }),
    info: (details: object, message: string) => void lines.push({ level: 'info', details, message }),
  }
}

describe('dependency health', () => {
  it('logs one line when a dependency goes down and one when it returns, however many uses report it', () => {
    const log = recordingLog()
    let now = 1_000
    const health = createDependencyHealth(['database', 'redis'], log, () => now)
    const changes: string[] = []
    health.onChange((dependency, up) => changes.push(`${dependency}:${up}`))
    for (let i = 0; i < 50; i += 1)
      health.failed('redis', Object.assign(new Error('connect ECONNREFUSED'), { code: 'ECONNREFUSED' }))
    expect(health.isUp('redis')).toBe(false)
    expect(health.isUp('database')).toBe(true)
    now += 2_500
    for (let i = 0; i < 50; i += 1) health.succeeded('redis')
    expect(log.lines).toEqual([
      {
        level: 'error',
        details: { dependency: 'redis', error: 'connect ECONNREFUSED' },
        message: 'redis unavailable',
      },
      { level: 'info', details: { dependency: 'redis', downMs: 2_500 }, message: 'redis available again' },
    ])
    expect(changes).toEqual(['redis:false', 'redis:true'])
  })

  it('lists only the dependencies in use, with when their state last changed', () => {
    let now = Date.UTC(2026, 10, 27)
    const health = createDependencyHealth(['database'], recordingLog(), () => now)
    now += 1_000
    health.failed('database', new Error('timeout'))
    health.failed('redis', new Error('not used: ignored'))
    expect(health.states()).toEqual({
      database: { up: false, since: '2026-11-27T00:00:01.000Z', error: 'timeout' },
    })
  })

  it('while a dependency is down, probes it until a ping answers, which marks it up; not while it is up', async () => {
    const health = createDependencyHealth(['database'], recordingLog())
    let pings = 0
    let answers = false
    const stop = health.probeWhileDown(
      'database',
      async () => {
        pings += 1
        if (!answers) throw new Error('still down')
      },
      10,
    )
    await new Promise((resolve) => setTimeout(resolve, 50))
    expect(pings).toBe(0)
    health.failed('database', new Error('gone'))
    await new Promise((resolve) => setTimeout(resolve, 50))
    expect(pings).toBeGreaterThan(0)
    expect(health.isUp('database')).toBe(false)
    answers = true
    await new Promise((resolve) => setTimeout(resolve, 50))
    expect(health.isUp('database')).toBe(true)
    const afterReturn = pings
    await new Promise((resolve) => setTimeout(resolve, 50))
    expect(pings).toBe(afterReturn)
    stop()
  })
})
