import type { FastifyInstance } from 'fastify'
import { upstreamPath } from '../../../lib/upstream/client.ts'
import { type ProxyRoute, registerProxyRoutes } from '../proxy-route.ts'
import {
  MarketBalanceBody,
  MarketParams,
  MarketQuery,
  NewsParams,
  NewsQuery,
  SymbolParams,
  TickerQuery,
} from './market-data.schemas.ts'

const tags = ['market data']

/** Markets, tickers, calendar and news are the same for everyone: one shared cache entry per path and query. */
const shared = { method: 'GET', cache: 'shared', answer: 'data', tags } as const

const newsList = (name: string, summary: string): ProxyRoute => ({
  ...shared,
  url: `/api/${name}`,
  upstream: () => `/${name}`,
  answer: 'paginated',
  summary,
  querystring: NewsQuery,
})

/** The spec's "Markets, news, analysis" section, but `GET /api/analysis` (chat issue). */
export const marketDataRoutes: readonly ProxyRoute[] = [
  {
    ...shared,
    url: '/api/markets',
    upstream: () => '/markets',
    summary: 'Markets, or the one market named by market_id',
    querystring: MarketQuery,
  },
  {
    ...shared,
    url: '/api/markets/:marketId',
    upstream: ({ marketId = '' }) => upstreamPath`/markets/${marketId}`,
    summary: 'One market',
    params: MarketParams,
  },
  {
    ...shared,
    url: '/api/tickers',
    upstream: () => '/tickers',
    summary: 'Tickers, optionally of one market',
    querystring: TickerQuery,
  },
  {
    ...shared,
    url: '/api/tickers/:symbol',
    upstream: ({ symbol = '' }) => upstreamPath`/tickers/${symbol}`,
    summary: 'One ticker (a symbol holding `/` is sent percent-encoded)',
    params: SymbolParams,
  },
  {
    ...shared,
    url: '/api/market-calendar',
    upstream: () => '/market-calendar',
    summary: 'The market calendar',
  },
  {
    method: 'POST',
    url: '/api/market-balance',
    upstream: () => '/market-balance',
    auth: 'verified',
    // A read, sent as a POST for its filters: it spends the read allowance.
    budget: 'reads',
    cache: 'none',
    answer: 'data',
    tags,
    summary: 'Market balance for the given filters (never cached)',
    body: MarketBalanceBody,
  },
  newsList('news', 'News, paginated as the upstream pages it'),
  {
    ...shared,
    url: '/api/news/:id',
    upstream: ({ id = '' }) => upstreamPath`/news/${id}`,
    summary: 'One news item',
    params: NewsParams,
  },
  newsList('popular-news', 'Popular news, paginated'),
  newsList('crypto-news', 'Crypto news, paginated'),
  {
    ...shared,
    url: '/api/legacy_analysis',
    upstream: () => '/legacy_analysis',
    summary: 'Older analysis data',
  },
]

/** Market data through the caching proxy. */
export default async function marketDataPlugin(app: FastifyInstance) {
  registerProxyRoutes(app, app.services.proxy, marketDataRoutes)
}
