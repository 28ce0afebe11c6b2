import { tickers } from '../catalogue/markets.ts'
import { hashSeed, prng, round, SIM_NOW, simDate } from '../prng.ts'
import type { Account, Strategy } from './store.ts'

// Read-only per-user answers derived from the store: signals and the broker-account series.

/** Signals of the user's strategies that have signals on: three each, derived from the strategy. */
export function signalsFor(strategies: Strategy[]) {
  return strategies
    .filter((s) => s.signals_enabled)
    .flatMap((strategy) => {
      const random = prng(hashSeed(`${strategy.id}:${strategy.symbol}`))
      const price = tickers.find((t) => t.symbol === strategy.symbol)?.price ?? 100
      return [1, 2, 3].map((k) => ({
        id: strategy.id * 100 + k,
        strategy_id: strategy.id,
        strategy_name: strategy.name,
        symbol: strategy.symbol,
        side: strategy.direction === 'short' ? 'sell' : random() < 0.7 ? 'buy' : 'sell',
        price: round(price * (1 + (random() - 0.5) * 0.04), 4),
        confidence: round(0.5 + random() * 0.5, 2),
        timeframe: strategy.timeframe,
        created_at: simDate(k * 45 * 60_000 + (strategy.id % 7) * 60_000),
      }))
    })
    .sort((a, b) => b.created_at.localeCompare(a.created_at) || a.id - b.id)
}

const DAY = 86_400_000

function equityCurve(account: Account) {
  const random = prng(account.seed)
  const start = account.type === 'margin' ? 25_000 + random() * 75_000 : 5_000 + random() * 20_000
  let equity = start
  return Array.from({ length: 90 }, (_, i) => {
    if (i > 0) equity *= 1 + (random() - 0.47) * 0.02
    return { date: new Date(SIM_NOW - (89 - i) * DAY).toISOString().slice(0, 10), equity: round(equity) }
  })
}

export function accountBalance(account: Account) {
  const equity = equityCurve(account).at(-1)?.equity ?? 0
  const cash = round(equity * 0.35)
  const marginUsed = account.type === 'margin' ? round(equity * 0.15) : 0
  return {
    account_id: account.id,
    currency: account.currency,
    equity,
    cash,
    buying_power: account.type === 'margin' ? round((equity - marginUsed) * 2) : cash,
    margin_used: marginUsed,
    updated_at: simDate(0),
  }
}

export function accountGrowth(account: Account) {
  const points = equityCurve(account)
  const first = points[0]?.equity ?? 1
  const last = points.at(-1)?.equity ?? first
  return {
    account_id: account.id,
    currency: account.currency,
    start_equity: first,
    end_equity: last,
    growth_percent: round(((last - first) / first) * 100),
    points: points.map((p) => ({ ...p, growth_percent: round(((p.equity - first) / first) * 100) })),
  }
}

export function accountPnl(account: Account) {
  const points = equityCurve(account)
  const daily = points.slice(1).map((p, i) => ({
    date: p.date,
    pnl: round(p.equity - (points[i]?.equity ?? p.equity)),
    cumulative_pnl: round(p.equity - (points[0]?.equity ?? p.equity)),
  }))
  return {
    account_id: account.id,
    currency: account.currency,
    total_pnl: daily.at(-1)?.cumulative_pnl ?? 0,
    points: daily,
  }
}
