import { Type } from 'typebox'
import { marketDataRoutes } from '../../proxy/market-data/market-data.routes.ts'
import { MarketBalanceBody } from '../../proxy/market-data/market-data.schemas.ts'
import { TickerSymbol } from '../../proxy/proxy.schemas.ts'
import type { ProxyCaller } from './proxy-reads.ts'
import { routeOf } from './proxy-reads.ts'
import { accountOf, define, ToolRefusal } from './tool-definition.ts'

const marketFilter = Type.Object({
  market_id: Type.Optional(
    Type.String({ minLength: 1, maxLength: 191, description: 'A market id, e.g. US.' }),
  ),
})

/** The pro edition's market tools: shared market data, read through the same cache as the API. */
export function marketTools(call: ProxyCaller) {
  const markets = routeOf(marketDataRoutes, '/api/markets')
  const tickers = routeOf(marketDataRoutes, '/api/tickers')
  const ticker = routeOf(marketDataRoutes, '/api/tickers/:symbol')
  const calendar = routeOf(marketDataRoutes, '/api/market-calendar')
  const balance = routeOf(marketDataRoutes, '/api/market-balance', 'POST')
  const marketQuery = (market_id?: string) => (market_id ? { market_id } : {})
  return [
    define<{ market_id?: string }>({
      name: 'get_markets',
      description: 'The markets (exchanges, hours, currency), or one market by id.',
      input: marketFilter,
      run: ({ market_id }, context) => call(markets, context, { query: marketQuery(market_id) }),
    }),
    define<{ market_id?: string }>({
      name: 'get_tickers',
      description: 'Tickers with prices, optionally of one market.',
      input: marketFilter,
      run: ({ market_id }, context) => call(tickers, context, { query: marketQuery(market_id) }),
    }),
    define<{ symbol: string }>({
      name: 'get_ticker',
      description: 'One ticker by symbol (e.g. AAPL, BTC/USD).',
      input: Type.Object({ symbol: TickerSymbol }),
      run: ({ symbol }, context) => call(ticker, context, { params: { symbol } }),
    }),
    define<{ sector: string; market_id?: string }>({
      name: 'get_sector',
      description: 'The tickers of one sector (e.g. Technology), optionally in one market.',
      input: Type.Object({
        sector: Type.String({ minLength: 1, maxLength: 64 }),
        market_id: marketFilter.properties.market_id,
      }),
      run: async ({ sector, market_id }, context) => {
        const all = await call(tickers, context, { query: marketQuery(market_id) })
        const wanted = sector.toLowerCase()
        return (Array.isArray(all) ? all : []).filter(
          (row) => typeof row?.sector === 'string' && row.sector.toLowerCase() === wanted,
        )
      },
    }),
    define({
      name: 'get_market_calendar',
      description: 'The market calendar: holidays and special sessions.',
      input: Type.Object({}),
      run: (_input, context) => call(calendar, context),
    }),
    define<{ filters: Record<string, unknown> }>({
      name: 'get_market_balance',
      description: 'Market balance (breadth) for a market, period, interval and session.',
      input: MarketBalanceBody,
      run: ({ filters }, context) => {
        // The API route is for verified addresses only; so is the tool.
        if (!accountOf(context).emailVerifiedAt) throw new ToolRefusal('Verify your email address first.')
        return call(balance, context, { body: { filters } })
      },
    }),
  ]
}
