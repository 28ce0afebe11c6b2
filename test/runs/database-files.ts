import { existsSync, readFileSync } from 'node:fs'
import { dirname, resolve } from 'node:path'

// What reaches a database or Redis: opening one, or naming the servers the PostgreSQL + Redis run gives.
const DATABASE_OPENERS = ['src/db/client.ts', 'test/helpers/test-database.ts']
const SERVER_VARIABLES = /\bTEST_(DATABASE|REDIS)_URL\b|\bREDIS_URL\b/

// Relative imports, read as src/structure.test.ts reads them.
const IMPORT = /(?:\bfrom\s+|\bimport\s*\(\s*|^\s*import\s+)'(\.{1,2}\/[^']+)'/gm

/**
 * The test files under `root` that can reach a database or Redis through their relative imports
 * (or name the test servers themselves): the ones the PostgreSQL + Redis run repeats. The others
 * touch neither and run once, on the plain `npm test`.
 */
export function filesThatTouchDatabases(root: string, testFiles: string[]): string[] {
  const openers = new Set(DATABASE_OPENERS.map((file) => resolve(root, file)))
  const known = new Map<string, boolean>()
  const touches = (file: string, trail: Set<string>): boolean => {
    const seen = known.get(file)
    if (seen !== undefined) return seen
    if (openers.has(file)) return true
    if (trail.has(file) || !existsSync(file)) return false
    trail.add(file)
    const text = readFileSync(file, 'utf8')
    let answer = SERVER_VARIABLES.test(text)
    for (const match of text.matchAll(IMPORT)) {
      if (answer) break
      answer = touches(resolve(dirname(file), match[1] as string), trail)
    }
    trail.delete(file)
    known.set(file, answer)
    return answer
  }
  return testFiles.filter((file) => touches(resolve(root, file), new Set()))
}
