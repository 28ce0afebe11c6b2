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

/** An entry of `links[]`: a page (or Previous / Next), or the '...' gap, which has no `page` key. */
export type PaginatorLink =
  | { url: string | null; label: string; page: number | null; active: boolean }
  | { url: null; label: '...'; active: boolean }

/** Laravel's LengthAwarePaginator::toArray(), keys in Laravel's order. */
export interface LengthAwarePage<T> {
  current_page: number
  data: T[]
  first_page_url: string
  from: number | null
  last_page: number
  last_page_url: string
  links: PaginatorLink[]
  next_page_url: string | null
  path: string
  per_page: number
  prev_page_url: string | null
  to: number | null
  total: number
}

export interface PaginateInput<T> {
  /** The rows of this page only. */
  data: T[]
  total: number
  perPage: number
  /** The requested page; anything that is not an integer >= 1 reads as 1, as Laravel's resolver does. */
  page: unknown
  /** The URL without query, as request()->url(). */
  path: string
  /**
   * The page size the request asked for (`?per_page`), if it did: kept in the page links (Laravel's
   * ->appends()), so following them leads to pages of the same size. Before `query`.
   */
  requestedPerPage?: number
  /** Extra query kept in page links (->appends()); `page` always comes last. */
  query?: Record<string, string | number>
}

// PHP's rawurlencode (RFC 3986), which http_build_query(..., PHP_QUERY_RFC3986) uses.
const rawUrlEncode = (value: string) =>
  encodeURIComponent(value).replace(/[!'()*]/g, (c) => `%${c.charCodeAt(0).toString(16).toUpperCase()}`)

/** Laravel's page resolution: `?page=` that is not an integer >= 1 becomes 1. */
export function resolvePage(page: unknown): number {
  const value = typeof page === 'number' ? page : typeof page === 'string' ? Number(page) : Number.NaN
  return Number.isInteger(value) && value >= 1 ? value : 1
}

// UrlWindow with onEachSide = 3: the page numbers shown, with null standing for the '...' entry.
function urlWindow(current: number, last: number): Array<number | null> {
  const range = (from: number, to: number) => Array.from({ length: to - from + 1 }, (_, i) => from + i)
  const onEachSide = 3
  if (last < onEachSide * 2 + 8) return range(1, last)
  const window = onEachSide + 4
  if (current <= window) return [...range(1, window + onEachSide), null, last - 1, last]
  if (current > last - window) return [1, 2, null, ...range(last - (window + onEachSide - 1), last)]
  return [1, 2, null, ...range(current - onEachSide, current + onEachSide), null, last - 1, last]
}

/**
 * Laravel's LengthAwarePaginator JSON (CONVENTIONS.md section 4), including the v12.23 `page` key in
 * `links[]`. The one paginator helper: resource collections derive from it with `resourceCollection`.
 */
export function paginate<T>(input: PaginateInput<T>): LengthAwarePage<T> {
  const current = resolvePage(input.page)
  const last = Math.max(Math.ceil(input.total / input.perPage), 1)
  const query = [
    ...(input.requestedPerPage === undefined ? [] : [['per_page', input.requestedPerPage] as const]),
    ...Object.entries(input.query ?? {}),
  ].filter(([key]) => key !== 'page')
  const url = (page: number) =>
    `${input.path}?${[...query, ['page', String(page)]].map(([k, v]) => `${rawUrlEncode(String(k))}=${rawUrlEncode(String(v))}`).join('&')}`
  const from = input.data.length > 0 ? (current - 1) * input.perPage + 1 : null
  const prev = current > 1 ? current - 1 : null
  const next = current < last ? current + 1 : null
  const links: PaginatorLink[] = [
    { url: prev ? url(prev) : null, label: '&laquo; Previous', page: prev, active: false },
    ...urlWindow(current, last).map(
      (page): PaginatorLink =>
        page === null
          ? { url: null, label: '...', active: false }
          : { url: url(page), label: String(page), page, active: page === current },
    ),
    { url: next ? url(next) : null, label: 'Next &raquo;', page: next, active: false },
  ]
  return {
    current_page: current,
    data: input.data,
    first_page_url: url(1),
    from,
    last_page: last,
    last_page_url: url(last),
    links,
    next_page_url: next ? url(next) : null,
    path: input.path,
    per_page: input.perPage,
    prev_page_url: prev ? url(prev) : null,
    to: from === null ? null : from + input.data.length - 1,
    total: input.total,
  }
}

/** An API Resource collection over a paginator (PaginatedResourceResponse): `{data, links, meta}`. */
export function resourceCollection<T>(page: LengthAwarePage<T>) {
  const { data, first_page_url, last_page_url, prev_page_url, next_page_url, ...rest } = page
  return {
    data,
    links: { first: first_page_url, last: last_page_url, prev: prev_page_url, next: next_page_url },
    meta: {
      current_page: rest.current_page,
      from: rest.from,
      last_page: rest.last_page,
      links: rest.links,
      path: rest.path,
      per_page: rest.per_page,
      to: rest.to,
      total: rest.total,
    },
  }
}
