import { existsSync } from 'node:fs'

/** Debian's Chromium, which playwright-core drives (`npx playwright install` cannot download here). */
export const CHROMIUM = '/usr/bin/chromium'

/**
 * Flags for Chromium on this machine: headless as root, and none of its background connections,
 * which the closed network would refuse by the dozen.
 */
export const CHROMIUM_ARGS: readonly string[] = [
  '--headless',
  '--no-sandbox',
  '--disable-gpu',
  '--disable-quic',
  '--no-first-run',
  '--disable-background-networking',
  '--disable-component-update',
  '--disable-sync',
]

/** Throws, saying how to install it, when Chromium is missing. */
export function requireChromium(): void {
  if (!existsSync(CHROMIUM)) {
    throw new Error(
      `${CHROMIUM} is missing: run \`bash scripts/ensure-test-deps.sh\` (npm test runs it first)`,
    )
  }
}
