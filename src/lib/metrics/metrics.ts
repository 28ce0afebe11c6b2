import { Counter, Gauge, Histogram, Registry } from 'prom-client'
import { processMetrics } from './process-metrics.ts'

/** Every series of this service starts with it; prom-client's process series keep their own names. */
export const METRIC_PREFIX = 'trading_api_'

export type LabelValues<L extends string> = Readonly<Record<L, string>>

export interface SeriesSpec<L extends string> {
  /** Without the prefix, e.g. `http_requests_total`. */
  name: string
  help: string
  /** Each label's values come from a small fixed set: never an id, an email, a symbol or a URL. */
  labelNames?: readonly L[]
}

/** A gauge's `read`: sets its values (`{}` as the labels of a gauge without any). */
export interface GaugeSpec<L extends string> extends SeriesSpec<L> {
  read(set: (labels: LabelValues<L>, value: number) => void): void | Promise<void>
}

/** One series of a counter. */
export interface CounterSeries {
  inc(by?: number): void
}

export interface MetricCounter<L extends string> {
  /** The series of these label values, made on the first call: keep it where the counting happens. */
  series(labels: LabelValues<L>): CounterSeries
}

export interface Metrics {
  /** Whether anyone can read them (METRICS_TOKEN is set): per-request recording is skipped otherwise. */
  readonly enabled: boolean
  readonly contentType: string
  counter<L extends string = never>(spec: SeriesSpec<L>): MetricCounter<L>
  /** A histogram; on a hot path, make each `labels(...)` child once and keep it. */
  histogram<L extends string = never>(spec: SeriesSpec<L> & { buckets: number[] }): Histogram<L>
  /**
   * A gauge read when scraped, so that nothing is updated on any request's path. A failing read is
   * reported and leaves the gauge without values (0 for one without labels).
   */
  gauge<L extends string = never>(spec: GaugeSpec<L>): void
  /** The Prometheus text of this app's series and the process's. */
  scrape(): Promise<string>
}

class Tally<L extends string> implements CounterSeries {
  value = 0
  readonly labels: LabelValues<L>
  constructor(labels: LabelValues<L>) {
    this.labels = labels
  }
  inc(by = 1) {
    this.value += by
  }
}

/**
 * A counter whose series are plain numbers bumped in place, copied into prom-client's counter when
 * scraped: prom-client hashes the labels on every `inc`, even a child's, and some counts are made on
 * every cached read.
 */
function createCounter<L extends string>(
  registers: Registry[],
  { name, help, labelNames = [] }: SeriesSpec<L>,
): MetricCounter<L> {
  const tallies = new Map<string, Tally<L>>()
  new Counter<L>({
    name: METRIC_PREFIX + name,
    help,
    labelNames,
    registers,
    collect() {
      this.reset()
      for (const tally of tallies.values()) this.inc(tally.labels, tally.value)
    },
  })
  return {
    series(labels) {
      const key = labelNames.map((label) => labels[label]).join('\n')
      let tally = tallies.get(key)
      if (!tally) {
        tally = new Tally<L>({ ...labels })
        tallies.set(key, tally)
      }
      return tally
    },
  }
}

function createGauge<L extends string>(
  registers: Registry[],
  { name, help, labelNames = [], read }: GaugeSpec<L>,
  onReadError: (error: unknown, metric: string) => void,
): void {
  new Gauge<L>({
    name: METRIC_PREFIX + name,
    help,
    labelNames,
    registers,
    async collect() {
      // Gathered first and set at once, so that two scrapes at a time never interleave their values.
      const values: [LabelValues<L>, number][] = []
      try {
        await read((labels, value) => values.push([labels, value]))
      } catch (error) {
        values.length = 0
        onReadError(error, name)
      }
      this.reset()
      for (const [labels, value] of values) this.set(labels, value)
    },
  })
}

/**
 * The metrics of one app, in a registry of its own (tests build many apps in one process; the
 * global default registry would refuse the second app's series).
 */
export function createMetrics({
  enabled,
  onReadError,
}: {
  enabled: boolean
  onReadError: (error: unknown, metric: string) => void
}): Metrics {
  const registry = new Registry()
  const registers = [registry]
  if (enabled) processMetrics() // starts the event-loop monitor now, so the first scrape has a lag

  return {
    enabled,
    contentType: registry.contentType,

    counter: (spec) => createCounter(registers, spec),

    histogram({ name, help, labelNames = [], buckets }) {
      return new Histogram({ name: METRIC_PREFIX + name, help, labelNames, buckets, registers })
    },

    gauge: (spec) => createGauge(registers, spec, onReadError),

    scrape: () => Registry.merge([registry, processMetrics()]).metrics(),
  }
}
