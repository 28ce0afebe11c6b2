/** A target's figure against its goal, as a bench's JSON records it. */
export interface TargetResult {
  figure: number
  comparison: '>=' | '<='
  goal: number
  unit: string
  met: boolean
}

export interface TargetOptions {
  /** What the figure is, before it (`b/a`, `p99`). */
  label?: string
  /** After the figure and the goal (` ms`, ` KiB`). */
  unit?: string
  /** Decimals printed (2). */
  digits?: number
}

/**
 * The targets of one bench: each checked figure prints the line every bench prints for a target,
 * `target <name>: <figure> (goal <goal>) met` or `... NOT met`, and is kept for BENCH_JSON.
 */
export function createTargets() {
  const results: Record<string, TargetResult> = {}
  return {
    /** Checks `figure` against `goal`, prints its line and answers whether it is met. */
    check(name: string, figure: number, comparison: '>=' | '<=', goal: number, options: TargetOptions = {}) {
      const { label, unit = '', digits = 2 } = options
      const met = Number.isFinite(figure) && (comparison === '>=' ? figure >= goal : figure <= goal)
      results[name] = { figure, comparison, goal, unit: unit.trim(), met }
      const shown = `${label ? `${label} ` : ''}${figure.toFixed(digits)}${unit}`
      console.log(`target ${name}: ${shown} (goal ${comparison} ${goal}${unit}) ${met ? 'met' : 'NOT met'}`)
      return met
    },
    /** Every target checked so far, by name: the `targets` member of the bench's JSON. */
    results,
  }
}
