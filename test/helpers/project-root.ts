import { join } from 'node:path'
import { fileURLToPath } from 'node:url'

/** The project's folder: where `npm run` runs, and the working directory of the CLI under test. */
export const projectRoot = fileURLToPath(new URL('../..', import.meta.url))

/** The project's own Node (the `node` package's), which child processes run as `npm start` does. */
export const nodeBin = join(projectRoot, 'node_modules/.bin/node')
