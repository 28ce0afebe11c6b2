/** Sockets open per client address on this instance, so one client cannot take every slot. */
export function createAddressSlots(maxPerAddress: number) {
  const open = new Map<string, number>()
  return {
    /** Takes a slot for `address`, or answers false when it already has `maxPerAddress`. */
    take(address: string): boolean {
      const count = open.get(address) ?? 0
      if (count >= maxPerAddress) return false
      open.set(address, count + 1)
      return true
    },
    release(address: string): void {
      const count = (open.get(address) ?? 1) - 1
      if (count > 0) open.set(address, count)
      else open.delete(address)
    },
  }
}
