import { describe, expect, it } from 'vitest'
import { createAddressSlots } from './address-slots.ts'

describe('createAddressSlots', () => {
  it('gives an address at most its slots, and one back for each socket that leaves', () => {
    const slots = createAddressSlots(2)
    const first = slots.take('203.0.113.7')
    const second = slots.take('203.0.113.7')
    expect(first).not.toBeNull()
    expect(second).not.toBeNull()
    expect(slots.take('203.0.113.7')).toBeNull()
    // Others are not held back.
    expect(slots.take('198.51.100.9')).not.toBeNull()

    first?.release()
    const third = slots.take('203.0.113.7')
    expect(third).not.toBeNull()
    expect(slots.take('203.0.113.7')).toBeNull()
    // Every slot given back: the address starts again from none.
    second?.release()
    third?.release()
    expect(slots.take('203.0.113.7')).not.toBeNull()
    expect(slots.take('203.0.113.7')).not.toBeNull()
    expect(slots.take('203.0.113.7')).toBeNull()
  })
})
