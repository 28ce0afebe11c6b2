import { describe, expect, it } from 'vitest'
import { keyByNetwork, throttleAddress, throttleNetwork } from './address.ts'

describe('throttleAddress', () => {
  it('keeps an IPv4 address whole', () => {
    expect(throttleAddress('203.0.113.7')).toBe('203.0.113.7')
  })

  it('counts an IPv6 address as its /64, however it is written', () => {
    const a = throttleAddress('2001:db8:1:2:aaaa:bbbb:cccc:dddd')
    expect(a).toBe('2001:db8:1:2::/64')
    expect(throttleAddress('2001:0db8:0001:0002::1')).toBe(a)
    expect(throttleAddress('2001:DB8:1:2::ffff:1.2.3.4')).toBe(a)
    expect(throttleAddress('2001:db8:1:3::1')).toBe('2001:db8:1:3::/64')
    expect(throttleAddress('2001:db8::1')).toBe('2001:db8:0:0::/64')
    expect(throttleAddress('::1')).toBe('0:0:0:0::/64')
    expect(throttleAddress('fe80::1%eth0')).toBe('fe80:0:0:0::/64')
  })

  it('counts an IPv4-mapped IPv6 address as the IPv4 address', () => {
    expect(throttleAddress('::ffff:203.0.113.7')).toBe('203.0.113.7')
    expect(throttleAddress('::FFFF:cb00:7107')).toBe('203.0.113.7')
  })

  it('leaves anything else as it is', () => {
    expect(throttleAddress('')).toBe('')
    expect(throttleAddress('not-an-address')).toBe('not-an-address')
  })
})

describe('throttleNetwork', () => {
  it('names the /48 of an IPv6 address, however it is written', () => {
    const network = throttleNetwork('2001:db8:1:2:aaaa:bbbb:cccc:dddd')
    expect(network).toBe('2001:db8:1::/48')
    expect(throttleNetwork('2001:0db8:0001:ffff::1')).toBe(network)
    expect(throttleNetwork('2001:DB8:1:0::ffff:1.2.3.4')).toBe(network)
    expect(throttleNetwork('2001:db8:2::1')).toBe('2001:db8:2::/48')
    expect(throttleNetwork('2001:db8::1')).toBe('2001:db8:0::/48')
    expect(throttleNetwork('fe80::1%eth0')).toBe('fe80:0:0::/48')
  })

  it('has none for IPv4, mapped or not, or anything else', () => {
    expect(throttleNetwork('203.0.113.7')).toBeUndefined()
    expect(throttleNetwork('::ffff:203.0.113.7')).toBeUndefined()
    expect(throttleNetwork('::FFFF:cb00:7107')).toBeUndefined()
    expect(throttleNetwork('')).toBeUndefined()
    expect(throttleNetwork('not-an-address')).toBeUndefined()
  })

  it('makes a network key only where there is a network', () => {
    expect(keyByNetwork('2001:db8:1:2::1', (network) => `a@b.c|${network}`)).toBe('a@b.c|2001:db8:1::/48')
    expect(keyByNetwork('203.0.113.7', (network) => `a@b.c|${network}`)).toBeUndefined()
  })
})
