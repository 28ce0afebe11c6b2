import { hashSeed, pick, prng, round, simDate } from '../prng.ts'

// The shared catalogue: markets, a few hundred tickers, the market calendar and market balance.

export interface Market {
  id: string
  name: string
  region: string
  exchanges: string[]
  timezone: string
  currency: string
  open_time: string
  close_time: string
  trading_days: string
  ticker_count: number
}

export interface Ticker {
  symbol: string
  name: string
  market_id: string
  exchange: string
  sector: string
  currency: string
  price: number
  previous_close: number
  change: number
  change_percent: number
  volume: number
  market_cap: number | null
}

const MARKETS: Array<Omit<Market, 'ticker_count'> & { size: number }> = [
  {
    id: 'US',
    name: 'US Equities',
    region: 'North America',
    exchanges: ['NYSE', 'NASDAQ'],
    timezone: 'America/New_York',
    currency: 'USD',
    open_time: '09:30',
    close_time: '16:00',
    trading_days: 'Mon-Fri',
    size: 185,
  },
  {
    id: 'EU',
    name: 'European Equities',
    region: 'Europe',
    exchanges: ['XETRA', 'EURONEXT'],
    timezone: 'Europe/Berlin',
    currency: 'EUR',
    open_time: '09:00',
    close_time: '17:30',
    trading_days: 'Mon-Fri',
    size: 45,
  },
  {
    id: 'JP',
    name: 'Japanese Equities',
    region: 'Asia',
    exchanges: ['TSE'],
    timezone: 'Asia/Tokyo',
    currency: 'JPY',
    open_time: '09:00',
    close_time: '15:30',
    trading_days: 'Mon-Fri',
    size: 30,
  },
  {
    id: 'CRYPTO',
    name: 'Crypto',
    region: 'Global',
    exchanges: ['COINBASE'],
    timezone: 'UTC',
    currency: 'USD',
    open_time: '00:00',
    close_time: '24:00',
    trading_days: 'Mon-Sun',
    size: 20,
  },
  {
    id: 'FX',
    name: 'Foreign Exchange',
    region: 'Global',
    exchanges: ['OTC'],
    timezone: 'America/New_York',
    currency: 'USD',
    open_time: '17:00',
    close_time: '17:00',
    trading_days: 'Sun-Fri',
    size: 20,
  },
]

const SECTORS = ['Technology', 'Healthcare', 'Financials', 'Energy', 'Industrials', 'Consumer', 'Utilities']
const NAME_PARTS = ['Ac', 'Bri', 'Cor', 'Dyn', 'Ex', 'Flu', 'Gen', 'Hal', 'Ion', 'Jet', 'Kor', 'Lum', 'Mer']
const NAME_ENDS = ['tech', 'ora', 'vex', 'dyne', 'lith', 'ant', 'is', 'on', 'ix']
const SUFFIXES = ['Inc.', 'Corp.', 'Holdings', 'Group', 'Systems', 'Labs']
const COINS = [
  ['BTC', 'Bitcoin'],
  ['ETH', 'Ethereum'],
  ['SOL', 'Solana'],
  ['XRP', 'XRP'],
  ['ADA', 'Cardano'],
  ['DOGE', 'Dogecoin'],
  ['AVAX', 'Avalanche'],
  ['DOT', 'Polkadot'],
  ['LINK', 'Chainlink'],
  ['LTC', 'Litecoin'],
  ['MATIC', 'Polygon'],
  ['ATOM', 'Cosmos'],
  ['XLM', 'Stellar'],
  ['UNI', 'Uniswap'],
  ['BCH', 'Bitcoin Cash'],
  ['ALGO', 'Algorand'],
  ['NEAR', 'NEAR Protocol'],
  ['FIL', 'Filecoin'],
  ['AAVE', 'Aave'],
  ['ETC', 'Ethereum Classic'],
] as const
const CURRENCIES = ['EUR', 'USD', 'JPY', 'GBP', 'CHF', 'AUD', 'CAD', 'NZD']

function tickerSymbol(market: string, random: () => number, index: number): [string, string] {
  const letters = () => String.fromCharCode(65 + Math.floor(random() * 26))
  const company = `${pick(random, NAME_PARTS)}${pick(random, NAME_ENDS)} ${pick(random, SUFFIXES)}`
  if (market === 'US')
    return [Array.from({ length: 2 + Math.floor(random() * 3) }, letters).join(''), company]
  if (market === 'EU')
    return [`${Array.from({ length: 3 }, letters).join('')}.${pick(random, ['DE', 'PA', 'AS'])}`, company]
  if (market === 'JP') return [`${1000 + Math.floor(random() * 8999)}.T`, company]
  if (market === 'CRYPTO') {
    const [coin, name] = COINS[index % COINS.length] as readonly [string, string]
    return [`${coin}-USD`, name]
  }
  const base = CURRENCIES[index % CURRENCIES.length] as string
  const quote = CURRENCIES[(index + 1 + Math.floor(index / CURRENCIES.length)) % CURRENCIES.length] as string
  return [`${base}${quote}`, `${base}/${quote}`]
}

function basePrice(market: string, random: () => number): number {
  if (market === 'CRYPTO') return 0.1 * 10 ** (random() * 5.7)
  if (market === 'FX') return 0.5 + random() * 1.5
  if (market === 'JP') return 300 + random() * 9000
  return 5 + random() ** 2 * 600
}

function buildCatalogue() {
  const random = prng(20250630)
  const tickers: Ticker[] = []
  const markets: Market[] = []
  for (const { size, ...market } of MARKETS) {
    const seen = new Set(tickers.map((t) => t.symbol))
    let index = 0
    let made = 0
    while (made < size) {
      const [symbol, name] = tickerSymbol(market.id, random, index++)
      if (seen.has(symbol) || symbol.slice(0, 3) === symbol.slice(3)) continue
      seen.add(symbol)
      made++
      const digits = market.id === 'FX' ? 5 : market.id === 'CRYPTO' ? 4 : 2
      const previous = round(basePrice(market.id, random), digits)
      const price = round(previous * (1 + (random() - 0.5) * 0.08), digits)
      tickers.push({
        symbol,
        name,
        market_id: market.id,
        exchange: pick(random, market.exchanges),
        sector:
          market.id === 'CRYPTO'
            ? 'Digital Assets'
            : market.id === 'FX'
              ? 'Currencies'
              : pick(random, SECTORS),
        currency: market.id === 'FX' ? symbol.slice(3) : market.currency,
        price,
        previous_close: previous,
        change: round(price - previous, digits),
        change_percent: round(((price - previous) / previous) * 100),
        volume: Math.floor(random() * 50_000_000),
        market_cap: market.id === 'FX' ? null : Math.floor(price * (1e6 + random() * 5e9)),
      })
    }
    markets.push({ ...market, ticker_count: size })
  }
  return { markets, tickers }
}

export const { markets, tickers } = buildCatalogue()

export interface CalendarEntry {
  date: string
  market_id: string
  type: 'holiday' | 'early_close'
  name: string
  close_time: string | null
}

const HOLIDAYS: Array<[string, string, string, string?]> = [
  ['US', '2025-01-01', "New Year's Day"],
  ['US', '2025-01-20', 'Martin Luther King Jr. Day'],
  ['US', '2025-02-17', "Presidents' Day"],
  ['US', '2025-04-18', 'Good Friday'],
  ['US', '2025-05-26', 'Memorial Day'],
  ['US', '2025-06-19', 'Juneteenth'],
  ['US', '2025-07-03', 'Independence Day (eve)', '13:00'],
  ['US', '2025-07-04', 'Independence Day'],
  ['US', '2025-09-01', 'Labor Day'],
  ['US', '2025-11-27', 'Thanksgiving Day'],
  ['US', '2025-11-28', 'Day after Thanksgiving', '13:00'],
  ['US', '2025-12-24', 'Christmas Eve', '13:00'],
  ['US', '2025-12-25', 'Christmas Day'],
  ['EU', '2025-01-01', "New Year's Day"],
  ['EU', '2025-04-18', 'Good Friday'],
  ['EU', '2025-04-21', 'Easter Monday'],
  ['EU', '2025-05-01', 'Labour Day'],
  ['EU', '2025-12-24', 'Christmas Eve', '14:00'],
  ['EU', '2025-12-25', 'Christmas Day'],
  ['EU', '2025-12-26', "St. Stephen's Day"],
  ['EU', '2025-12-31', "New Year's Eve", '14:00'],
  ['JP', '2025-01-01', "New Year's Day"],
  ['JP', '2025-01-13', 'Coming of Age Day'],
  ['JP', '2025-02-11', 'National Foundation Day'],
  ['JP', '2025-04-29', 'Showa Day'],
  ['JP', '2025-05-05', "Children's Day"],
  ['JP', '2025-11-03', 'Culture Day'],
  ['JP', '2025-12-31', "New Year's Eve"],
  ['FX', '2025-12-25', 'Christmas Day'],
  ['FX', '2025-01-01', "New Year's Day"],
]

export const calendar: CalendarEntry[] = HOLIDAYS.map(([market_id, date, name, close]) => ({
  date,
  market_id,
  type: close ? ('early_close' as const) : ('holiday' as const),
  name,
  close_time: close ?? null,
})).sort((a, b) => a.date.localeCompare(b.date) || a.market_id.localeCompare(b.market_id))
/** The market-balance series for a filter set: the same filters always give the same numbers. */
export function marketBalance(filters: {
  marketId: string
  filteredPeriod?: string
  filteredInterval?: string
  filteredSession?: string
}) {
  const random = prng(hashSeed(JSON.stringify(filters)))
  const listed = tickers.filter((t) => t.market_id === filters.marketId).length || 100
  const points = Array.from({ length: 30 }, (_, i) => {
    const advancers = Math.floor(random() * listed)
    const decliners = Math.floor(random() * (listed - advancers))
    return {
      time: simDate((30 - i) * 3_600_000),
      advancers,
      decliners,
      unchanged: listed - advancers - decliners,
      ratio: decliners === 0 ? null : round(advancers / decliners, 3),
    }
  })
  const latest = points.at(-1) as (typeof points)[number]
  return {
    market_id: filters.marketId,
    period: filters.filteredPeriod ?? '1d',
    interval: filters.filteredInterval ?? '1h',
    session: filters.filteredSession ?? 'regular',
    advancers: latest.advancers,
    decliners: latest.decliners,
    unchanged: latest.unchanged,
    series: points,
  }
}
