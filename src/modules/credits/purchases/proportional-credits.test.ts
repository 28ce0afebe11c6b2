import { describe, expect, it } from 'vitest'
import { proportionalCredits } from './proportional-credits.ts'

describe('proportionalCredits', () => {
  it('answers every credit for the whole amount, and none for nothing', () => {
    expect(proportionalCredits('600', 4900, 4900)).toBe('600')
    expect(proportionalCredits('600', 9999, 4900)).toBe('600')
    expect(proportionalCredits('600', 0, 4900)).toBe('0')
  })

  it('is exact to 1/10000 credit, half rounded up', () => {
    expect(proportionalCredits('600', 2450, 4900)).toBe('300')
    // 100 credits * 1/3 = 33.33333...
    expect(proportionalCredits('100', 300, 900)).toBe('33.3333')
    // 100 credits * 2/3 = 66.66666... rounds up
    expect(proportionalCredits('100', 600, 900)).toBe('66.6667')
    expect(proportionalCredits('0.0001', 1, 2)).toBe('0.0001')
    expect(proportionalCredits('1500', 1, 9900)).toBe('0.1515')
  })
})
