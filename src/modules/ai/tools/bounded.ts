/** The most items of a list a tool hands the model, and the most JSON text of any one result. */
export const MAX_TOOL_ITEMS = 20
export const MAX_TOOL_RESULT_BYTES = 16 * 1024

const jsonSize = (value: unknown) => Buffer.byteLength(JSON.stringify(value) ?? 'null')

/**
 * A tool result cut to size, so one answer (a market of thousands of tickers) cannot fill the
 * model's context or the stream: lists keep their first items and say how many there were;
 * anything still too large is cut as text.
 */
export function bounded(value: unknown): unknown {
  if (Array.isArray(value)) {
    let items = value.slice(0, MAX_TOOL_ITEMS)
    while (items.length > 1 && jsonSize(items) > MAX_TOOL_RESULT_BYTES)
      items = items.slice(0, items.length >> 1)
    if (items.length < value.length) {
      return capped({ items, total: value.length, truncated: true })
    }
    return capped(items)
  }
  return capped(value)
}

function capped(value: unknown): unknown {
  if (jsonSize(value) <= MAX_TOOL_RESULT_BYTES) return value ?? null
  const text = JSON.stringify(value)
  const cut = (length: number) => {
    // Never split a surrogate pair: half a character is not text.
    const end = /[\uD800-\uDBFF]/.test(text.charAt(length - 1)) ? length - 1 : length
    return { truncated: true, text: text.slice(0, end) }
  }
  // The longest cut that still fits once serialised (escapes and multi-byte characters included).
  let low = 0
  let high = Math.min(text.length, MAX_TOOL_RESULT_BYTES)
  while (low < high) {
    const middle = Math.ceil((low + high) / 2)
    if (jsonSize(cut(middle)) <= MAX_TOOL_RESULT_BYTES) low = middle
    else high = middle - 1
  }
  return cut(low)
}
