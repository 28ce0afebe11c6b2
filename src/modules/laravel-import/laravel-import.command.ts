import type { Config } from '../../config.ts'
import { laravelKeys } from '../../lib/laravel-compat/keys.ts'
import type { FileStorage } from '../../lib/storage/storage.ts'
import type { FieldErrors } from '../../lib/validation.ts'
import { formatImportNote, formatImportSummary, progressLine } from './import-report.ts'
import type { ImportSummary } from './import-summary.ts'
import { DEFAULT_BATCH_SIZE, type LaravelImportService } from './laravel-import.service.ts'
import { createPhotoCopier } from './photo-copy.ts'
import { LaravelSchemaError } from './sources/laravel-source.ts'
import { openLaravelSource, SOURCE_URL_FORMS, SourceUrlError } from './sources/open-source.ts'

/** The options of `import:laravel`, as parseArgs gives them. */
export interface ImportCommandValues {
  from?: string
  'app-key'?: string
  'previous-keys'?: string
  photos?: string
  sessions?: boolean
  'session-serialization'?: string
  'dry-run'?: boolean
  'batch-size'?: string
}

export const IMPORT_COMMAND_OPTIONS = {
  from: { type: 'string' },
  'app-key': { type: 'string' },
  'previous-keys': { type: 'string' },
  photos: { type: 'string' },
  sessions: { type: 'boolean', default: false },
  'session-serialization': { type: 'string' },
  'dry-run': { type: 'boolean', default: false },
  'batch-size': { type: 'string' },
} as const

export interface ImportCommandOptions {
  from: string
  keys: string[]
  photosDir: string | undefined
  sessions: { serialization: 'php' | 'json' } | undefined
  dryRun: boolean
  batchSize: number
}

// Statement parameters: users are inserted a batch in one statement, about 15 per user.
const MAX_BATCH_SIZE = 2000

/** The command's options checked (keys from the options, else LARAVEL_APP_KEY / LARAVEL_PREVIOUS_KEYS); never echoes a key. */
export function parseImportOptions(
  values: ImportCommandValues,
  config: Config,
): { options: ImportCommandOptions } | { errors: FieldErrors } {
  const errors: FieldErrors = {}
  const from = values.from?.trim()
  if (!from) errors.from = [`The from field is required: ${SOURCE_URL_FORMS}.`]
  const appKey = values['app-key'] ?? config.laravel.appKey
  const previousKeys = values['previous-keys'] ?? config.laravel.previousKeys ?? ''
  let keys: string[] = []
  if (!appKey) {
    errors['app-key'] = ["The app key field is required (the original's APP_KEY, or LARAVEL_APP_KEY)."]
  } else {
    try {
      keys = laravelKeys(appKey, previousKeys)
    } catch {
      errors['app-key'] = [
        'Each key must be base64: and 16 or 32 bytes (as Laravel writes APP_KEY), or 16 or 32 characters.',
      ]
    }
  }
  const serialization = values['session-serialization'] ?? 'php'
  if (serialization !== 'php' && serialization !== 'json') {
    errors['session-serialization'] = ['The session serialization field must be php or json.']
  }
  const batchSize = values['batch-size'] === undefined ? DEFAULT_BATCH_SIZE : Number(values['batch-size'])
  if (!Number.isInteger(batchSize) || batchSize < 1 || batchSize > MAX_BATCH_SIZE) {
    errors['batch-size'] = [`The batch size field must be a whole number from 1 to ${MAX_BATCH_SIZE}.`]
  }
  if (Object.keys(errors).length > 0) return { errors }
  return {
    options: {
      from: from as string,
      keys,
      photosDir: values.photos,
      sessions: values.sessions ? { serialization: serialization as 'php' | 'json' } : undefined,
      dryRun: values['dry-run'] ?? false,
      batchSize,
    },
  }
}

/** Whether a user, or a signed-in session, was not imported (guests' sessions are not missed). */
function leftBehind(summary: ImportSummary): boolean {
  const { guest: _guests, ...sessionSkips } = summary.sessions?.skipped ?? {}
  return Object.keys(summary.users.skipped).length > 0 || Object.keys(sessionSkips).length > 0
}

interface Output {
  write(text: string): unknown
}

/**
 * Runs the import as the CLI asked: notes on rows not taken whole on `out` as they happen, the
 * summary at the end, a progress line on `err` when it is a terminal. Answers the exit code, as
 * import:laravel-credits does: 0 when every user (and signed-in session) was imported or already
 * was, 2 when some were skipped (each in the report), 1 when it could not start.
 */
export async function runImportCommand(input: {
  options: ImportCommandOptions
  service: LaravelImportService
  storage: FileStorage
  /** Where the import writes (describeDatabase), for the report. */
  target: string
  out: Output
  err: Output & { isTTY?: boolean }
}): Promise<number> {
  const { options, out, err } = input
  let source: Awaited<ReturnType<typeof openLaravelSource>>
  try {
    source = await openLaravelSource(options.from)
  } catch (error) {
    if (error instanceof SourceUrlError) err.write(`from: ${error.message}\n`)
    // The driver's own message (file not found, connection refused, access denied); never the URL.
    else err.write(`The Laravel database could not be opened: ${(error as Error).message}\n`)
    return 1
  }
  const progress = err.isTTY ? (text: string) => err.write(`\r${text}\u001b[K`) : undefined
  try {
    const summary = await input.service.run({
      source,
      keys: options.keys,
      photos: createPhotoCopier({ dir: options.photosDir, storage: input.storage }),
      sessions: options.sessions,
      dryRun: options.dryRun,
      batchSize: options.batchSize,
      onNote: (note) => out.write(`${formatImportNote(note, options.dryRun)}\n`),
      onProgress: progress && ((state) => progress(progressLine(state))),
    })
    if (progress) err.write('\r\u001b[K')
    out.write(formatImportSummary(summary, { from: source.label, into: input.target }))
    return leftBehind(summary) ? 2 : 0
  } catch (error) {
    if (progress) err.write('\n')
    if (!(error instanceof LaravelSchemaError)) throw error
    err.write(`${error.message}\nNothing was imported.\n`)
    return 1
  } finally {
    await source.close()
  }
}
