import { pick, prng, round, simDate } from '../prng.ts'
import { tickers } from './markets.ts'

// News lists (paginated by the routes) and the legacy analysis, generated once from fixed seeds.

export interface NewsItem {
  id: number
  title: string
  summary: string
  source: string
  url: string
  category: 'markets' | 'crypto'
  symbols: string[]
  views: number
  published_at: string
}

const HEADLINES = [
  '{name} shares {move} after quarterly results',
  'Analysts {verb} {symbol} ahead of earnings',
  '{name} announces new buyback programme',
  'Traders watch {symbol} as volume {move}',
  '{name} {move} on guidance update',
  'Why {symbol} is on every watchlist this week',
]
const SOURCES = ['MarketWire', 'The Ticker Tape', 'Global Finance Daily', 'Street Journal', 'CoinDesk Weekly']

function buildNews(count: number, startId: number, category: NewsItem['category'], seed: number): NewsItem[] {
  const random = prng(seed)
  const pool = tickers.filter((t) =>
    category === 'crypto' ? t.market_id === 'CRYPTO' : t.market_id !== 'CRYPTO',
  )
  return Array.from({ length: count }, (_, i) => {
    const ticker = pick(random, pool)
    const title = pick(random, HEADLINES)
      .replace('{name}', ticker.name)
      .replace('{symbol}', ticker.symbol)
      .replace('{move}', pick(random, ['jump', 'slide', 'rally', 'dip', 'surge']))
      .replace('{verb}', pick(random, ['upgrade', 'downgrade', 'reassess']))
    const id = startId + i
    return {
      id,
      title,
      summary: `${ticker.name} (${ticker.symbol}) traded at ${ticker.price} ${ticker.currency}, ${ticker.change_percent}% on the day.`,
      source: pick(random, SOURCES),
      url: `https://news.example.com/articles/${id}`,
      category,
      symbols: [ticker.symbol],
      views: Math.floor(random() * 100_000),
      published_at: simDate((i + 1) * 37 * 60_000),
    }
  })
}

export const news = buildNews(150, 1, 'markets', 11)
export const cryptoNews = buildNews(80, 1001, 'crypto', 12)
/** The most-read market news, most read first. */
export const popularNews = [...news].sort((a, b) => b.views - a.views || a.id - b.id).slice(0, 60)
export const newsById = new Map([...news, ...cryptoNews].map((item) => [item.id, item]))

export interface AnalysisItem {
  id: number
  symbol: string
  title: string
  summary: string
  sentiment: 'bullish' | 'bearish' | 'neutral'
  score: number
  timeframe: string
  created_at: string
}

export const legacyAnalysis: AnalysisItem[] = (() => {
  const random = prng(13)
  return Array.from({ length: 24 }, (_, i) => {
    const ticker = pick(random, tickers)
    const sentiment = pick(random, ['bullish', 'bearish', 'neutral'] as const)
    return {
      id: i + 1,
      symbol: ticker.symbol,
      title: `${ticker.symbol}: ${sentiment} setup on the ${pick(random, ['daily', 'weekly', '4h'])} chart`,
      summary: `Momentum and volume suggest a ${sentiment} bias for ${ticker.name}.`,
      sentiment,
      score: round(random() * 100, 1),
      timeframe: pick(random, ['1d', '1w', '4h']),
      created_at: simDate((i + 1) * 6 * 3_600_000),
    }
  })
})()
