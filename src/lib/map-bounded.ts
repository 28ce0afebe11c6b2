/**
 * fn over every item, at most `width` running at once; the results in the items' order. On the
 * first failure no further item starts, and once the running ones have ended it rejects with that
 * failure (so nothing is left running behind the caller, who may close what fn uses).
 */
export async function mapBounded<T, R>(
  items: readonly T[],
  width: number,
  fn: (item: T) => Promise<R>,
): Promise<R[]> {
  const results: R[] = new Array(items.length)
  let next = 0
  let failure: { error: unknown } | undefined
  const worker = async () => {
    while (!failure && next < items.length) {
      const i = next++
      try {
        results[i] = await fn(items[i] as T)
      } catch (error) {
        failure ??= { error }
      }
    }
  }
  await Promise.all(Array.from({ length: Math.max(1, Math.min(width, items.length)) }, worker))
  if (failure) throw failure.error
  return results
}
