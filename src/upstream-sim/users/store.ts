import { tickers } from '../catalogue/markets.ts'
import { hashSeed, pick, prng, round, simDate } from '../prng.ts'

// Per-user state of the simulator, keyed by X-User-Id and kept in memory. Ids are global (one counter
// per kind), so another user's id is simply not found in this user's state.

export type Strategy = {
  id: number
  user_id: string
  name: string
  symbol: string
  direction: string
  timeframe: string
  status: 'on' | 'off'
  signals_enabled: boolean
  trades_enabled: boolean
  orders_enabled: boolean
  notifications: { signals: boolean; trades: boolean; orders: boolean }
  allocation: Record<string, unknown>
  sizing_ordering: Record<string, unknown>
  trailing_stop: Record<string, unknown>
  order_cancelation: Record<string, unknown>
  chat_webhook_url: string | null
  risk_management: Record<string, unknown>
  retained: boolean
  retained_at: string | null
  deployed: boolean
  deployed_at: string | null
  duplicated_from: number | null
  last_test_notification_at: string | null
  created_at: string
  updated_at: string
  [extra: string]: unknown
}

export type Condition = {
  id: number
  user_id: string
  strategy_id: number | null
  name: string
  indicator: string
  operator: string
  value: number
  timeframe: string
  reading: number | null
  read_at: string | null
  created_at: string
  updated_at: string
  [extra: string]: unknown
}

export interface Activity {
  id: number
  strategy_id: number
  action: string
  description: string
  created_at: string
}

export interface Account {
  id: number
  user_id: string
  name: string
  broker: string
  account_number: string
  type: 'cash' | 'margin'
  currency: string
  opened_at: string
  /** Seeds the account's series; the id depends on access order, this does not. */
  seed: number
}

interface UserState {
  strategies: Map<number, Strategy>
  conditions: Map<number, Condition>
  activities: Activity[]
  accounts: Account[]
}

/** Fields a payload may not set: identity and timestamps belong to the store. */
const PROTECTED = new Set(['id', 'user_id', 'created_at', 'updated_at'])

export function payloadFields(body: unknown): Record<string, unknown> {
  if (!body || typeof body !== 'object' || Array.isArray(body)) return {}
  return Object.fromEntries(Object.entries(body).filter(([key]) => !PROTECTED.has(key)))
}

const laravelNow = (now: () => number) => new Date(now()).toISOString().replace(/\.(\d{3})Z$/, '.$1000Z')

export function createUserStore(now: () => number = Date.now) {
  const users = new Map<string, UserState>()
  const next = { strategy: 1, condition: 1, activity: 1, account: 1 }
  const stamp = () => laravelNow(now)

  function newStrategy(userId: string, fields: Record<string, unknown>, createdAt = stamp()): Strategy {
    const ticker = tickers[hashSeed(`${userId}:${next.strategy}`) % tickers.length]
    return {
      id: next.strategy++,
      user_id: userId,
      name: 'Untitled strategy',
      symbol: ticker?.symbol ?? 'AAPL',
      direction: 'long',
      timeframe: '1h',
      status: 'off',
      signals_enabled: true,
      trades_enabled: false,
      orders_enabled: false,
      notifications: { signals: true, trades: false, orders: false },
      allocation: { type: 'percent', value: 10 },
      sizing_ordering: { order_type: 'market', quantity_type: 'shares', quantity: 10 },
      trailing_stop: { enabled: false, percent: 2 },
      order_cancelation: { enabled: false, after_minutes: 30 },
      chat_webhook_url: null,
      risk_management: { stop_loss_percent: 5, take_profit_percent: 10, max_daily_loss: 500 },
      retained: false,
      retained_at: null,
      deployed: false,
      deployed_at: null,
      duplicated_from: null,
      last_test_notification_at: null,
      ...fields,
      created_at: createdAt,
      updated_at: createdAt,
    }
  }

  function newCondition(userId: string, fields: Record<string, unknown>, createdAt = stamp()): Condition {
    return {
      id: next.condition++,
      user_id: userId,
      strategy_id: null,
      name: 'Untitled condition',
      indicator: 'rsi',
      operator: '<',
      value: 30,
      timeframe: '1h',
      reading: null,
      read_at: null,
      ...fields,
      created_at: createdAt,
      updated_at: createdAt,
    }
  }

  // A new user starts with two strategies, three conditions and two broker accounts, seeded by id.
  function seed(userId: string): UserState {
    const random = prng(hashSeed(userId))
    const state: UserState = { strategies: new Map(), conditions: new Map(), activities: [], accounts: [] }
    const seeded = [
      { name: 'Momentum breakout', direction: 'long', timeframe: '15m', status: 'on' as const },
      { name: 'Mean reversion', direction: 'short', timeframe: '1h', status: 'off' as const },
    ]
    seeded.forEach((fields, i) => {
      const symbol = pick(random, tickers).symbol
      const strategy = newStrategy(userId, { ...fields, symbol }, simDate((10 - i) * 86_400_000))
      state.strategies.set(strategy.id, strategy)
      log(state, strategy.id, 'created', `Strategy "${strategy.name}" created`, strategy.created_at)
    })
    const [first, second] = [...state.strategies.values()] as [Strategy, Strategy]
    for (const [strategy, name, indicator, operator, value] of [
      [first, 'RSI oversold', 'rsi', '<', 30],
      [first, 'Price above SMA 50', 'sma_50', 'crosses_above', 0],
      [second, 'Volume spike', 'volume_ratio', '>', 2],
    ] as const) {
      const condition = newCondition(
        userId,
        { strategy_id: strategy.id, name, indicator, operator, value, timeframe: strategy.timeframe },
        strategy.created_at,
      )
      condition.reading = round(random() * 100)
      condition.read_at = simDate(60_000)
      state.conditions.set(condition.id, condition)
    }
    for (const [k, type] of (['margin', 'cash'] as const).entries()) {
      state.accounts.push({
        id: next.account++,
        user_id: userId,
        name: type === 'margin' ? 'Individual Margin' : 'Roth IRA',
        broker: 'Simulated Brokerage',
        account_number: `****${String(Math.floor(random() * 10_000)).padStart(4, '0')}`,
        type,
        currency: 'USD',
        opened_at: simDate((400 + k * 200) * 86_400_000),
        seed: hashSeed(`${userId}:account:${k}`),
      })
    }
    return state
  }

  function log(state: UserState, strategyId: number, action: string, description: string, at = stamp()) {
    state.activities.push({
      id: next.activity++,
      strategy_id: strategyId,
      action,
      description,
      created_at: at,
    })
  }

  const user = (userId: string): UserState => {
    let state = users.get(userId)
    if (!state) {
      state = seed(userId)
      users.set(userId, state)
    }
    return state
  }

  return {
    stamp,
    listStrategies: (userId: string) => [...user(userId).strategies.values()],
    findStrategy: (userId: string, id: number) => user(userId).strategies.get(id),
    createStrategy(userId: string, fields: Record<string, unknown>): Strategy {
      const state = user(userId) // seeds a new user before the id is taken
      const strategy = newStrategy(userId, fields)
      state.strategies.set(strategy.id, strategy)
      log(state, strategy.id, 'created', `Strategy "${strategy.name}" created`)
      return strategy
    },
    /** Applies fields to a strategy, stamps it and logs the action in its activities. */
    updateStrategy(userId: string, strategy: Strategy, fields: Record<string, unknown>, action = 'updated') {
      Object.assign(strategy, fields, { updated_at: stamp() })
      log(user(userId), strategy.id, action, `Strategy "${strategy.name}": ${action}`)
      return strategy
    },
    deleteStrategy(userId: string, id: number) {
      const state = user(userId)
      state.strategies.delete(id)
      for (const condition of state.conditions.values())
        if (condition.strategy_id === id) condition.strategy_id = null
    },
    activities: (userId: string, strategyId: number) =>
      user(userId)
        .activities.filter((a) => a.strategy_id === strategyId)
        .reverse(),
    listConditions: (userId: string, strategyId?: number) =>
      [...user(userId).conditions.values()].filter(
        (c) => strategyId === undefined || c.strategy_id === strategyId,
      ),
    findCondition: (userId: string, id: number) => user(userId).conditions.get(id),
    createCondition(userId: string, fields: Record<string, unknown>): Condition {
      const state = user(userId) // seeds a new user before the id is taken
      const condition = newCondition(userId, fields)
      state.conditions.set(condition.id, condition)
      return condition
    },
    updateCondition: (condition: Condition, fields: Record<string, unknown>) =>
      Object.assign(condition, fields, { updated_at: stamp() }),
    deleteCondition: (userId: string, id: number) => user(userId).conditions.delete(id),
    accounts: (userId: string) => user(userId).accounts,
    findAccount: (userId: string, id: number) => user(userId).accounts.find((a) => a.id === id),
  }
}

export type UserStore = ReturnType<typeof createUserStore>
