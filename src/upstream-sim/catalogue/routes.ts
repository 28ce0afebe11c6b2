import { paginate, resolvePage, resourceCollection } from '../../lib/laravel.ts'
import {
  type Context,
  data,
  invalid,
  isObject,
  missing,
  positiveId,
  type RouteEntry,
  type SimAnswer,
} from '../answers.ts'
import { calendar, marketBalance, markets, tickers } from './markets.ts'
import { cryptoNews, legacyAnalysis, type NewsItem, news, newsById, popularNews } from './news.ts'

function paginated(items: NewsItem[], ctx: Context): SimAnswer {
  const perPageText = ctx.query.get('per_page')
  const asked = Number(perPageText)
  const perPage = Number.isInteger(asked) && asked >= 1 && asked <= 100 ? asked : 15
  const current = resolvePage(ctx.query.get('page'))
  const page = paginate({
    data: items.slice((current - 1) * perPage, current * perPage),
    total: items.length,
    perPage,
    page: current,
    path: `${ctx.origin}${ctx.path}`,
    // Links keep per_page so following them stays on the same page size.
    query: perPageText === null ? {} : { per_page: perPage },
  })
  return { status: 200, body: resourceCollection(page) }
}
/** Markets, tickers, calendar, market balance, news and legacy analysis: the same for every caller. */
export const catalogueRoutes: RouteEntry[] = [
  [
    'GET',
    '/markets',
    (ctx) => {
      const id = ctx.query.get('market_id')
      if (id === null) return data(markets)
      const market = markets.find((m) => m.id === id.toUpperCase())
      return market ? data(market) : missing('Market', id)
    },
    'shared',
  ],
  [
    'GET',
    '/markets/:id',
    (ctx) => {
      const market = markets.find((m) => m.id === ctx.params.id?.toUpperCase())
      return market ? data(market) : missing('Market', ctx.params.id ?? '')
    },
    'shared',
  ],
  [
    'GET',
    '/tickers',
    (ctx) => {
      const id = ctx.query.get('market_id')?.toUpperCase()
      return data(id ? tickers.filter((t) => t.market_id === id) : tickers)
    },
    'shared',
  ],
  [
    'GET',
    '/tickers/:symbol',
    (ctx) => {
      const ticker = tickers.find((t) => t.symbol === ctx.params.symbol?.toUpperCase())
      return ticker ? data(ticker) : missing('Ticker', ctx.params.symbol ?? '')
    },
    'shared',
  ],
  [
    'GET',
    '/market-calendar',
    (ctx) => {
      const id = ctx.query.get('market_id')?.toUpperCase()
      return data(id ? calendar.filter((c) => c.market_id === id) : calendar)
    },
    'shared',
  ],
  [
    'POST',
    '/market-balance',
    (ctx) => {
      const filters = ctx.body.filters
      if (!isObject(filters) || typeof filters.marketId !== 'string' || filters.marketId === '') {
        return invalid({ 'filters.marketId': ['The filters.marketId field is required.'] })
      }
      const text = (key: string) => (typeof filters[key] === 'string' ? (filters[key] as string) : undefined)
      return data(
        marketBalance({
          marketId: filters.marketId,
          filteredPeriod: text('filteredPeriod'),
          filteredInterval: text('filteredInterval'),
          filteredSession: text('filteredSession'),
        }),
      )
    },
    'shared',
  ],
  ['GET', '/news', (ctx) => paginated(news, ctx), 'shared'],
  [
    'GET',
    '/news/:id',
    (ctx) => {
      const item = newsById.get(positiveId(ctx.params.id) ?? 0)
      return item ? data(item) : missing('News', ctx.params.id ?? '')
    },
    'shared',
  ],
  ['GET', '/popular-news', (ctx) => paginated(popularNews, ctx), 'shared'],
  ['GET', '/crypto-news', (ctx) => paginated(cryptoNews, ctx), 'shared'],
  ['GET', '/legacy_analysis', () => data(legacyAnalysis), 'shared'],
]
