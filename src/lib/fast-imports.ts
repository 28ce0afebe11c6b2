import { type ResolveFnOutput, registerHooks } from 'node:module'

/**
 * Resolves drizzle-orm's modules without most of Node's package lookups, which are costly for it.
 *
 * Node's ESM loader (24.x) reads a package's config through a function that spreads it, running
 * its lazy `exports` getter: a JSON.parse of the whole `exports` map, on every bare specifier it
 * resolves and for the "type" of every `.js` file it loads. drizzle-orm's map is 175 KB and the
 * app loads over a hundred of its files, imported from some 30 of its own: each start parsed the
 * map hundreds of times, about 0.5 s of CPU and tens of MB of heap. So:
 * - drizzle-orm is `"type": "module"` and its ES build imports its own files as `./x.js` or
 *   `../y.js`: those resolve to the file next to the importer, as an ES module, as Node would;
 * - a `drizzle-orm` or `drizzle-orm/...` specifier from outside node_modules (the app's own code)
 *   resolves the same from every such file: resolved once, then reused.
 * Everything else resolves as usual.
 *
 * Call it before the app's modules are imported (a static import graph is resolved before any of
 * it runs): server.ts does, then imports app.ts dynamically.
 */
export function speedUpDrizzleImports(): void {
  const root = new URL('./', import.meta.resolve('drizzle-orm')).href
  const fromApp = new Map<string, ResolveFnOutput>()
  registerHooks({
    resolve(specifier, context, nextResolve) {
      const parent = context.parentURL
      if (
        parent?.startsWith(root) &&
        parent.endsWith('.js') &&
        specifier.endsWith('.js') &&
        (specifier.startsWith('./') || specifier.startsWith('../'))
      ) {
        return { url: new URL(specifier, parent).href, format: 'module', shortCircuit: true }
      }
      if (
        (specifier === 'drizzle-orm' || specifier.startsWith('drizzle-orm/')) &&
        parent?.startsWith('file:') &&
        !parent.includes('/node_modules/')
      ) {
        const key = `${specifier}\0${context.conditions?.join(',')}`
        const known = fromApp.get(key)
        if (known) return { ...known, shortCircuit: true }
        const resolved = nextResolve(specifier, context)
        fromApp.set(key, resolved)
        return resolved
      }
      return nextResolve(specifier, context)
    },
  })
}
