/** One sample line of the Prometheus text format: `name{label="value",...} number`. */
export interface Sample {
  name: string
  labels: Record<string, string>
  value: number
}

const SAMPLE = /^([a-zA-Z_:][a-zA-Z0-9_:]*)(?:\{(.*)\})? (\S+)(?: -?\d+)?$/
const LABEL = /([a-zA-Z_][a-zA-Z0-9_]*)="((?:[^"\\]|\\.)*)"/g
const unescapeLabel = (value: string) =>
  value.replace(/\\(.)/g, (_, char: string) => (char === 'n' ? '\n' : char))

/** Every sample of a scrape, comments left out; throws on a line that is neither. */
export function parseSamples(text: string): Sample[] {
  const samples: Sample[] = []
  for (const line of text.split('\n')) {
    if (line === '' || line.startsWith('#')) continue
    const match = SAMPLE.exec(line)
    if (!match) throw new Error(`not a Prometheus sample line: ${line}`)
    const labels: Record<string, string> = {}
    for (const [, name = '', value = ''] of (match[2] ?? '').matchAll(LABEL))
      labels[name] = unescapeLabel(value)
    samples.push({ name: match[1] ?? '', labels, value: Number(match[3]) })
  }
  return samples
}

/**
 * The value of the one sample of `name` whose labels include `labels`; 0 when there is none (a
 * counter's series appears with its first count). Throws when several match.
 */
export function sampleValue(samples: Sample[], name: string, labels: Record<string, string> = {}): number {
  const found = samples.filter(
    (sample) =>
      sample.name === name && Object.entries(labels).every(([key, value]) => sample.labels[key] === value),
  )
  if (found.length > 1) throw new Error(`${found.length} samples of ${name} match ${JSON.stringify(labels)}`)
  return found[0]?.value ?? 0
}

/** The `# TYPE` of each metric family in a scrape. */
export function metricTypes(text: string): Map<string, string> {
  const types = new Map<string, string>()
  for (const [, name = '', type = ''] of text.matchAll(/^# TYPE (\S+) (\S+)$/gm)) types.set(name, type)
  return types
}
