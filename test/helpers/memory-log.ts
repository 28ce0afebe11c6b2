import { type Logger, type LoggerOptions, pino } from 'pino'
import { loggerOptions } from '../../src/lib/logging.ts'

export type LogLine = Record<string, unknown> & { msg?: string; request_id?: string }

export interface MemoryLog {
  /** A logger with the production settings (level info, redaction, serializers), writing here. */
  readonly logger: Logger
  /** Everything written so far; a test may clear it. */
  text: string
  /** What was written, one parsed object per line. */
  lines(): LogLine[]
}

/** The production logger, writing to memory: what a test reads back of the log (hand it in as `loggerInstance`). */
export function memoryLog(): MemoryLog {
  const log: MemoryLog = {
    text: '',
    logger: pino(loggerOptions('info') as LoggerOptions, {
      write(chunk: string) {
        log.text += chunk
      },
    }),
    lines: () =>
      log.text
        .split('\n')
        .filter((line) => line !== '')
        .map((line) => JSON.parse(line) as LogLine),
  }
  return log
}
