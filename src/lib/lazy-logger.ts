import type { FastifyBaseLogger } from 'fastify'
import type { Bindings, ChildLoggerOptions } from 'pino'

type PinoLike = FastifyBaseLogger & { isLevelEnabled?: (level: string) => boolean }
type Level = 'fatal' | 'error' | 'warn' | 'info' | 'debug' | 'trace'

/**
 * A request's logger, made on its first line. Fastify gives every request a pino child bound to its
 * request id; most requests write nothing through it (their access line has its own logger), and
 * making a child serialises its bindings, a few microseconds on every request.
 */
export function lazyChildLogger(
  parent: PinoLike,
  bindings: Bindings,
  options: ChildLoggerOptions,
): FastifyBaseLogger {
  // A route's own log level (rare), or a parent that cannot say what it writes: made at once.
  if (options.level !== undefined || typeof parent.isLevelEnabled !== 'function')
    return parent.child(bindings, options)
  return new LazyChild(parent, bindings, options) as unknown as FastifyBaseLogger
}

// A class, not an object of closures: one allocation per request.
class LazyChild {
  #made: PinoLike | undefined
  private readonly parent: PinoLike
  private readonly bindings: Bindings
  private readonly options: ChildLoggerOptions
  constructor(parent: PinoLike, bindings: Bindings, options: ChildLoggerOptions) {
    this.parent = parent
    this.bindings = bindings
    this.options = options
  }

  #real(): PinoLike {
    this.#made ??= this.parent.child(this.bindings, this.options)
    return this.#made
  }

  // A line below the parent's level is dropped without making the child (its level is the parent's
  // until someone sets its own, which makes it).
  #at(level: Level, args: unknown[]) {
    const logger = this.#made ?? (this.isLevelEnabled(level) ? this.#real() : undefined)
    if (logger) (logger[level] as (...args: unknown[]) => void)(...args)
  }

  get level() {
    return (this.#made ?? this.parent).level
  }
  set level(level: string) {
    this.#real().level = level
  }
  isLevelEnabled(level: string): boolean {
    const logger = this.#made ?? this.parent
    return logger.isLevelEnabled ? logger.isLevelEnabled(level) : true
  }
  fatal(...args: unknown[]) {
    this.#at('fatal', args)
  }
  error(...args: unknown[]) {
    this.#at('error', args)
  }
  warn(...args: unknown[]) {
    this.#at('warn', args)
  }
  info(...args: unknown[]) {
    this.#at('info', args)
  }
  debug(...args: unknown[]) {
    this.#at('debug', args)
  }
  trace(...args: unknown[]) {
    this.#at('trace', args)
  }
  silent() {}
  child(bindings: Bindings, options?: ChildLoggerOptions) {
    return this.#real().child(bindings, options)
  }
}
