import { readdirSync, readFileSync } from 'node:fs'
import { dirname, join, relative, resolve } from 'node:path'
import { fileURLToPath } from 'node:url'
import { is, Table } from 'drizzle-orm'
import { describe, expect, it } from 'vitest'
import * as schema from './db/schema/index.ts'

// The layering docs/ARCHITECTURE.md describes, read from the code's own imports.
const root = resolve(dirname(fileURLToPath(import.meta.url)), '..')
const src = join(root, 'src')

function sourceFiles(dir: string): string[] {
  return readdirSync(dir, { withFileTypes: true }).flatMap((entry) => {
    const path = join(dir, entry.name)
    if (entry.isDirectory()) return sourceFiles(path)
    return entry.name.endsWith('.ts') && !entry.name.endsWith('.test.ts') ? [path] : []
  })
}

const IMPORT = /(?:\bfrom\s+|\bimport\s*\(\s*|^\s*import\s+)'(\.{1,2}\/[^']+)'/gm

/** Every source file of src/ (tests left out), as a path under src/, with the files it imports. */
const graph = new Map(
  sourceFiles(src).map((file) => {
    const imports = [...readFileSync(file, 'utf8').matchAll(IMPORT)].map((match) =>
      relative(src, resolve(dirname(file), match[1] as string)),
    )
    return [relative(src, file), imports] as const
  }),
)

const layerOf = (file: string) => file.split('/')[0] as string
const moduleOf = (file: string) => (file.startsWith('modules/') ? file.split('/')[1] : undefined)

/** The cycles of a directed graph, one per strongly connected component of more than one node. */
function cycles(edges: Map<string, Set<string>>): string[][] {
  const index = new Map<string, number>()
  const low = new Map<string, number>()
  const stack: string[] = []
  const onStack = new Set<string>()
  const found: string[][] = []
  const visit = (node: string) => {
    index.set(node, index.size)
    low.set(node, index.get(node) as number)
    stack.push(node)
    onStack.add(node)
    for (const next of edges.get(node) ?? []) {
      if (!index.has(next)) {
        visit(next)
        low.set(node, Math.min(low.get(node) as number, low.get(next) as number))
      } else if (onStack.has(next)) {
        low.set(node, Math.min(low.get(node) as number, index.get(next) as number))
      }
    }
    if (low.get(node) === index.get(node)) {
      const component: string[] = []
      let member: string | undefined
      do {
        member = stack.pop() as string
        onStack.delete(member)
        component.push(member)
      } while (member !== node)
      if (component.length > 1) found.push(component.sort())
    }
  }
  for (const node of edges.keys()) if (!index.has(node)) visit(node)
  return found
}

describe('the structure of src/', () => {
  it('reads the imports it checks (a scan that found none would prove nothing)', () => {
    expect(graph.size).toBeGreaterThan(200)
    expect(graph.get('app.ts')).toContain('services.ts')
    expect(graph.get('plugins/session.ts')).toContain('lib/sessions/session-store.ts')
  })

  it('has no import cycle between files', () => {
    const edges = new Map([...graph].map(([file, imports]) => [file, new Set(imports)]))
    expect(cycles(edges)).toEqual([])
  })

  it('has no import cycle between modules', () => {
    const edges = new Map<string, Set<string>>()
    for (const [file, imports] of graph) {
      const from = moduleOf(file)
      if (!from) continue
      for (const target of imports) {
        const to = moduleOf(target)
        if (to && to !== from) edges.set(from, (edges.get(from) ?? new Set()).add(to))
      }
    }
    expect(edges.size).toBeGreaterThan(5)
    expect(cycles(edges)).toEqual([])
  })

  it('keeps each layer to what is below it: db and lib, then plugins, then modules, then the services', () => {
    const allowed: Record<string, string[]> = {
      db: ['db', 'lib'],
      lib: ['lib', 'db'],
      plugins: ['plugins', 'lib', 'db', 'config.ts'],
      modules: ['modules', 'plugins', 'lib', 'db', 'config.ts'],
      'upstream-sim': ['upstream-sim', 'lib', 'config.ts'],
    }
    const crossings: string[] = []
    for (const [file, imports] of graph) {
      const rule = allowed[layerOf(file)]
      if (!rule) continue
      for (const target of imports) {
        if (!rule.includes(layerOf(target))) crossings.push(`${file} -> ${target}`)
      }
    }
    expect(crossings).toEqual([])
  })

  it('builds domain services in src/services.ts and src/core-services.ts only', () => {
    const builders = [...graph.keys()].filter((file) => {
      if (file === 'services.ts' || file === 'core-services.ts') return false
      const text = readFileSync(join(src, file), 'utf8')
      // A service factory called (not defined) outside the composition root.
      return /(?<!function )\bcreate[A-Z]\w*Service\(/.test(
        text.replace(/export function create\w+Service\(/g, ''),
      )
    })
    // A service may build its own view of itself over a transaction (users.within).
    expect(builders.filter((file) => file !== 'modules/users/users.service.ts')).toEqual([])
  })

  it('writes each table from one repository', () => {
    const tables = Object.entries(schema)
      .filter(([, value]) => is(value, Table))
      .map(([name]) => name)
    expect(tables.length).toBeGreaterThan(15)
    const writers = new Map<string, Set<string>>()
    for (const file of graph.keys()) {
      const text = readFileSync(join(src, file), 'utf8')
      for (const table of tables) {
        const write = new RegExp(
          `\\.(insert|update|delete)\\(${table}\\)|(insert into|update|delete from) \\$\\{${table}\\}`,
        )
        if (write.test(text)) writers.set(table, (writers.get(table) ?? new Set()).add(file))
      }
    }
    expect(writers.get('users')).toEqual(new Set(['modules/users/users.repository.ts']))
    const shared = [...writers].filter(
      ([, files]) => files.size > 1 || ![...files][0]?.endsWith('.repository.ts'),
    )
    expect(shared.map(([table, files]) => `${table}: ${[...files].join(', ')}`)).toEqual([])
  })

  it('presents in services: no route handler calls a presenter', () => {
    const routeFiles = [...graph.keys()].filter((file) => file.endsWith('.routes.ts'))
    expect(routeFiles.length).toBeGreaterThan(20)
    const presenting = routeFiles.filter((file) =>
      /\bpresent[A-Z]\w*\(/.test(readFileSync(join(src, file), 'utf8')),
    )
    expect(presenting).toEqual([])
  })
})
