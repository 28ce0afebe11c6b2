import { mkdtempSync, rmSync, statSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { afterAll, describe, expect, it } from 'vitest'
import { createLocalStorage } from './local.ts'
import { describeFileStorageContract, generatedFile, newStoragePath } from './storage.contract.ts'

const root = mkdtempSync(join(tmpdir(), 'trading-api-local-storage-'))
afterAll(() => rmSync(root, { recursive: true, force: true }))
const storage = createLocalStorage(root)

describeFileStorageContract('local disk', () => storage)

describe('local disk storage', () => {
  it('keeps a file at its path under the root', async () => {
    const path = newStoragePath()
    await storage.put(path, Buffer.from('hello'))
    expect(statSync(join(root, path)).size).toBe(5)
  })

  it('writes a stream to disk as it comes: never far behind the source', async () => {
    const path = newStoragePath()
    const size = 12 * 1024 * 1024
    let furthestBehind = 0
    const source = generatedFile(size, {
      onChunk(madeBefore) {
        const onDisk = madeBefore === 0 ? 0 : statSync(join(root, path)).size
        furthestBehind = Math.max(furthestBehind, madeBefore - onDisk)
      },
    })
    expect(await storage.put(path, source)).toBe(size)
    // Stream buffers hold about a megabyte; holding the file would leave the disk 12 MiB behind.
    expect(furthestBehind).toBeLessThan(4 * 1024 * 1024)
  })
})
