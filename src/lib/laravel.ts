/** Laravel's JSON date: Carbon::toJSON, UTC with microseconds (`2024-05-01T12:34:56.000000Z`). */
export function laravelDate(date: Date): string
export function laravelDate(date: Date | null | undefined): string | null
export function laravelDate(date: Date | null | undefined): string | null {
  if (!date) return null
  return date.toISOString().replace(/\.(\d{3})Z$/, '.$1000Z')
}
