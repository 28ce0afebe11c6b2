/** The sockets one address holds open; each of them gives its slot back once, with `release`. */
export interface AddressSlot {
  release(): void
}

/** Sockets open per client address on this instance, so one client cannot take every slot. */
export function createAddressSlots(maxPerAddress: number) {
  // One record per address, shared by its sockets: a socket keeps a reference, not a closure.
  const open = new Map<string, { count: number; slot: AddressSlot }>()
  return {
    /** Takes a slot for `address`, or answers null when it already has `maxPerAddress`. */
    take(address: string): AddressSlot | null {
      const held = open.get(address)
      if (held) {
        if (held.count >= maxPerAddress) return null
        held.count++
        return held.slot
      }
      if (maxPerAddress < 1) return null
      const record = {
        count: 1,
        slot: {
          release() {
            if (--record.count === 0) open.delete(address)
          },
        },
      }
      open.set(address, record)
      return record.slot
    },
  }
}
