import { mkdtempSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { describe, expect, it } from 'vitest'
import { loadBillingCatalog, packageCredits, unitAmount } from './billing.catalog.ts'

const dir = mkdtempSync(join(tmpdir(), 'billing-catalog-'))
let files = 0
/** Writes `content` (JSON-encoded unless a string) to a new file and answers its path. */
const catalogFile = (content: unknown) => {
  const file = join(dir, `billing-${++files}.json`)
  writeFileSync(file, typeof content === 'string' ? content : JSON.stringify(content))
  return file
}
const pkg = { id: 'starter', name: 'Starter', credits: 100, price: 9.99, currency: 'usd' }
const feature = { id: 'ai_assistant', name: 'AI assistant answer', credit_cost: 0.5 }

describe('loadBillingCatalog', () => {
  it('reads config/billing.json: packages and features, found by id', () => {
    const catalog = loadBillingCatalog()
    expect(catalog.packages.map((p) => p.id)).toEqual(['starter', 'pro', 'desk'])
    expect(catalog.findPackage('pro')).toEqual({
      id: 'pro',
      name: 'Pro',
      credits: 600,
      price: 49,
      currency: 'usd',
    })
    expect(catalog.findPackage('nope')).toBeUndefined()
    expect(catalog.features.length).toBeGreaterThan(0)
    for (const feature of catalog.features) expect(catalog.findFeature(feature.id)).toBe(feature)
    expect(Object.isFrozen(catalog.packages[0])).toBe(true)
  })

  it('gives exact credits and whole cents', () => {
    const catalog = loadBillingCatalog(
      catalogFile({ packages: [pkg, { ...pkg, id: 'odd', credits: 0.1, price: 0.29 }], features: [] }),
    )
    expect(catalog.packages.map((p) => [packageCredits(p), unitAmount(p)])).toEqual([
      ['100', 999],
      ['0.1', 29],
    ])
  })

  it.each([
    ['a missing file', null, /ENOENT/],
    ['malformed JSON', '{"packages": [', /JSON/],
    [
      'no packages',
      { packages: [], features: [] },
      /packages: The packages field must have at least 1 items\./,
    ],
    [
      'a package without a price',
      { packages: [{ ...pkg, price: undefined }], features: [] },
      /packages\.0\.price: The packages\.0\.price field is required\./,
    ],
    [
      'a price in fractions of a cent',
      { packages: [{ ...pkg, price: 9.999 }], features: [] },
      /packages\.0\.price: 9\.999 is not a whole number of cents/,
    ],
    [
      'a zero-decimal currency',
      { packages: [{ ...pkg, currency: 'jpy' }], features: [] },
      /packages\.0\.currency/,
    ],
    [
      'an id unfit for a URL',
      { packages: [{ ...pkg, id: 'Pro Pack' }], features: [] },
      /packages\.0\.id: .* format is invalid/,
    ],
    [
      'a duplicate package id',
      { packages: [pkg, pkg], features: [] },
      /packages\.1\.id: "starter" is listed twice/,
    ],
    [
      'credits with 5 decimals',
      { packages: [pkg], features: [{ ...feature, credit_cost: 0.00001 }] },
      /features\.0: 0\.00001 credits has more than 4 decimals/,
    ],
    [
      'a feature without a cost',
      { packages: [pkg], features: [{ id: 'x', name: 'X' }] },
      /features\.0\.credit_cost/,
    ],
  ])('refuses %s with an error naming the file and the problem', (_label, content, problem) => {
    const file = content === null ? join(dir, 'missing.json') : catalogFile(content)
    let error: Error | undefined
    try {
      loadBillingCatalog(file)
    } catch (e) {
      error = e as Error
    }
    expect(error?.message).toContain(`Invalid billing catalog ${file}`)
    expect(error?.message).toMatch(problem)
  })
})
