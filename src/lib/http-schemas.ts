import { type TSchema, Type } from 'typebox'

/** Laravel's `{message}` body (401, 403, 404, 405, 419, 429, 500). */
export const MessageResponse = Type.Object({ message: Type.String() })

/** Laravel's validation body: `{message, errors: {field: [messages]}}`. */
export const ValidationResponse = Type.Object({
  message: Type.String(),
  errors: Type.Record(Type.String(), Type.Array(Type.String())),
})

/**
 * A 429 of Fortify's login limiter: the validation body on `email` (a throttle's own 429, with no
 * `errors`, is this shape too).
 */
export const LoginLockoutResponse = Type.Object({
  message: Type.String(),
  errors: Type.Optional(Type.Record(Type.String(), Type.Array(Type.String()))),
})

/** The statuses any JSON route can answer besides its own success. */
export const commonErrorResponses = {
  422: ValidationResponse,
  '4xx': MessageResponse,
  500: MessageResponse,
}

const PageUrl = Type.Union([Type.String({ format: 'uri' }), Type.Null()])

// Two shapes rather than an optional `page`: the serializer writes optional keys last, and
// Laravel's order is url, label, page, active; the `...` gap has no page.
const PaginatorLink = Type.Union([
  Type.Object({
    url: PageUrl,
    label: Type.String(),
    page: Type.Union([Type.Integer(), Type.Null()]),
    active: Type.Boolean(),
  }),
  Type.Object({ url: PageUrl, label: Type.String({ examples: ['...'] }), active: Type.Boolean() }),
])

/** Laravel's LengthAwarePaginator JSON (`lib/laravel.ts` `paginate`) around items of `item`. */
export const Paginated = <T extends TSchema>(item: T) =>
  Type.Object({
    current_page: Type.Integer(),
    data: Type.Array(item),
    first_page_url: Type.String({ format: 'uri' }),
    from: Type.Union([Type.Integer(), Type.Null()]),
    last_page: Type.Integer(),
    last_page_url: Type.String({ format: 'uri' }),
    links: Type.Array(PaginatorLink),
    next_page_url: PageUrl,
    path: Type.String({ format: 'uri' }),
    per_page: Type.Integer(),
    prev_page_url: PageUrl,
    to: Type.Union([Type.Integer(), Type.Null()]),
    total: Type.Integer(),
  })
