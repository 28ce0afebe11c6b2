import { Type } from 'typebox'
import { TickerSymbol, UpstreamId } from '../proxy.schemas.ts'

const Filter = Type.String({ maxLength: 191 })
// Null first: with coerceTypes a string branch tried first would turn null into "".
const OptionalFilter = Type.Optional(Type.Union([Type.Null(), Filter]))

export const MarketQuery = Type.Object({
  market_id: Type.Optional(
    Type.String({ minLength: 1, maxLength: 191, description: 'Answer this one market instead of the list.' }),
  ),
})

export const TickerQuery = Type.Object({
  market_id: Type.Optional(
    Type.String({ minLength: 1, maxLength: 191, description: "Only this market's tickers." }),
  ),
})

export const MarketParams = Type.Object({ marketId: UpstreamId })
export const SymbolParams = Type.Object({ symbol: TickerSymbol })
export const NewsParams = Type.Object({ id: UpstreamId })

/** The upstream's news lists are paginated; a page past the last is the upstream's to answer (empty). */
export const NewsQuery = Type.Object({
  page: Type.Optional(Type.Integer({ minimum: 1, maximum: 1_000_000 })),
  per_page: Type.Optional(Type.Integer({ minimum: 1, maximum: 100 })),
})

/** `POST /api/market-balance`: the filters of the balance screen; only the market is required. */
export const MarketBalanceBody = Type.Object({
  filters: Type.Object({
    marketId: Type.String({ minLength: 1, maxLength: 191 }),
    filteredPeriod: OptionalFilter,
    filteredInterval: OptionalFilter,
    filteredSession: OptionalFilter,
  }),
})
