/** Laravel's JSON date: Carbon::toJSON, UTC with microseconds (`2024-05-01T12:34:56.000000Z`). */
export function laravelDate(date: Date): string
export function laravelDate(date: Date | null | undefined): string | null
export function laravelDate(date: Date | null | undefined): string | null {
  if (!date) return null
  return date.toISOString().replace(/\.(\d{3})Z$/, '.$1000Z')
}

const plural = (count: number, unit: string) => `${count} ${unit}${count === 1 ? '' : 's'}`

// The later date moved back by whole calendar months, clamped to the month's last day as Carbon does.
function monthsBack(date: Date, months: number): Date {
  const back = new Date(date.getTime())
  const day = back.getUTCDate()
  back.setUTCDate(1)
  back.setUTCMonth(back.getUTCMonth() - months)
  const lastDay = new Date(Date.UTC(back.getUTCFullYear(), back.getUTCMonth() + 1, 0)).getUTCDate()
  back.setUTCDate(Math.min(day, lastDay))
  return back
}

function largestUnit(months: number, seconds: number): string {
  const days = Math.floor(seconds / 86_400)
  if (months >= 12) return plural(Math.floor(months / 12), 'year')
  if (months > 0) return plural(months, 'month')
  if (days >= 7) return plural(Math.floor(days / 7), 'week')
  if (days > 0) return plural(days, 'day')
  if (seconds >= 3600) return plural(Math.floor(seconds / 3600), 'hour')
  if (seconds >= 60) return plural(Math.floor(seconds / 60), 'minute')
  return plural(seconds, 'second')
}

/**
 * Carbon's diffForHumans() against `now`: the largest whole unit, rounded down ("0 seconds ago",
 * "1 minute ago", "3 weeks ago", "2 years ago"; "5 minutes from now" for a later date).
 */
export function diffForHumans(date: Date, now: Date): string {
  const past = date.getTime() <= now.getTime()
  const [from, to] = past ? [date, now] : [now, date]
  let months = (to.getUTCFullYear() - from.getUTCFullYear()) * 12 + (to.getUTCMonth() - from.getUTCMonth())
  while (months > 0 && monthsBack(to, months).getTime() < from.getTime()) months--
  const seconds = Math.floor((to.getTime() - from.getTime()) / 1000)
  const text = largestUnit(months, seconds)
  return past ? `${text} ago` : `${text} from now`
}

/** Laravel's Storage::disk('public')->url(): a file under the public disk, served at `/storage/...`. */
export const publicStorageUrl = (appUrl: string, path: string) => `${appUrl}/storage/${path}`
