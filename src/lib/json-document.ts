/**
 * What PostgreSQL's jsonb cannot hold in a free-form JSON document, found without recursion (so a
 * deep document cannot overflow the stack): null bytes and unpaired surrogates in keys or strings,
 * and nesting past `maxDepth` (the document itself is level 1). Answers the end of a sentence
 * ("must not ...") or null when the document can be stored.
 */
export function unstorableJson(document: unknown, maxDepth: number): string | null {
  const stack: Array<{ value: unknown; depth: number }> = [{ value: document, depth: 1 }]
  const badText = (text: string) => text.includes('\u0000') || !text.isWellFormed()
  while (stack.length > 0) {
    const { value, depth } = stack.pop() as { value: unknown; depth: number }
    if (typeof value === 'string') {
      if (badText(value)) return 'must not contain null bytes or unpaired surrogates.'
      continue
    }
    if (value === null || typeof value !== 'object') continue
    if (depth > maxDepth) return `must not be nested more than ${maxDepth} levels deep.`
    for (const [key, child] of Object.entries(value)) {
      if (badText(key)) return 'must not contain null bytes or unpaired surrogates.'
      stack.push({ value: child, depth: depth + 1 })
    }
  }
  return null
}

/** The size of a value as compact JSON, in UTF-8 bytes: what a document limit is measured in. */
export const jsonBytes = (value: unknown): number => Buffer.byteLength(JSON.stringify(value))
