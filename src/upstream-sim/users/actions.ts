import type { Strategy } from './store.ts'

// The 35 strategy action suffixes of the spec, one entry each: what POST /strategy/{id}/<suffix>
// does to the strategy. Settings take their field from the body; switches set or flip a flag.

export type ActionResult =
  | { set: Record<string, unknown> }
  | { invalid: Record<string, string[]> }
  /** Answered with a new copy of the strategy rather than a change to it. */
  | { duplicate: true }

type Action = (strategy: Strategy, body: Record<string, unknown>, now: string) => ActionResult

const isObject = (value: unknown): value is Record<string, unknown> =>
  typeof value === 'object' && value !== null && !Array.isArray(value)

/** A scalar setting: `{field: "..."}` replaces it; a body without the field changes nothing. */
function textSetting(field: string, nullable = false): Action {
  return (_strategy, body) => {
    if (!(field in body)) return { set: {} }
    const value = body[field]
    if (typeof value === 'string' && value.length > 0 && value.length <= 255)
      return { set: { [field]: value } }
    if (nullable && value === null) return { set: { [field]: null } }
    return { invalid: { [field]: [`The ${field.replaceAll('_', ' ')} field must be a string.`] } }
  }
}

/** An object setting: `{field: {...}}` or the body's own fields are merged into it. */
function objectSetting(field: keyof Strategy & string): Action {
  return (strategy, body) => {
    const given = field in body ? body[field] : body
    if (!isObject(given))
      return { invalid: { [field]: [`The ${field.replaceAll('_', ' ')} field must be an object.`] } }
    return { set: { [field]: { ...(strategy[field] as Record<string, unknown>), ...given } } }
  }
}

type Move = 'on' | 'off' | 'toggle'
const moved = (current: boolean, move: Move) => (move === 'toggle' ? !current : move === 'on')

function flagSwitch(flag: 'signals_enabled' | 'trades_enabled' | 'orders_enabled', move: Move): Action {
  return (strategy) => ({ set: { [flag]: moved(strategy[flag], move) } })
}

function notificationSwitch(kind: 'signals' | 'trades' | 'orders', move: Move): Action {
  return (strategy) => ({
    set: { notifications: { ...strategy.notifications, [kind]: moved(strategy.notifications[kind], move) } },
  })
}

export const STRATEGY_ACTIONS: Readonly<Record<string, Action>> = {
  'settings/update-name': textSetting('name'),
  'settings/update-symbol': textSetting('symbol'),
  'settings/update-direction': textSetting('direction'),
  'settings/update-timeframe': textSetting('timeframe'),
  'settings/update-allocation': objectSetting('allocation'),
  'settings/update-sizing-ordering': objectSetting('sizing_ordering'),
  'settings/update-trailing-stop': objectSetting('trailing_stop'),
  'settings/update-order-cancelation': objectSetting('order_cancelation'),
  'settings/update-chat-webhook-url': textSetting('chat_webhook_url', true),
  'settings/update-risk-management': objectSetting('risk_management'),
  retain: (_s, _b, now) => ({ set: { retained: true, retained_at: now } }),
  'retain-stop': () => ({ set: { retained: false, retained_at: null } }),
  deploy: (_s, _b, now) => ({ set: { deployed: true, deployed_at: now, status: 'on' } }),
  duplicate: () => ({ duplicate: true }),
  'status/on': () => ({ set: { status: 'on' } }),
  'status/off': () => ({ set: { status: 'off' } }),
  'signals/on': flagSwitch('signals_enabled', 'on'),
  'signals/off': flagSwitch('signals_enabled', 'off'),
  'signals/toggle': flagSwitch('signals_enabled', 'toggle'),
  'trades/on': flagSwitch('trades_enabled', 'on'),
  'trades/off': flagSwitch('trades_enabled', 'off'),
  'trades/toggle': flagSwitch('trades_enabled', 'toggle'),
  'orders/on': flagSwitch('orders_enabled', 'on'),
  'orders/off': flagSwitch('orders_enabled', 'off'),
  'orders/toggle': flagSwitch('orders_enabled', 'toggle'),
  'notifications/signals/on': notificationSwitch('signals', 'on'),
  'notifications/signals/off': notificationSwitch('signals', 'off'),
  'notifications/signals/toggle': notificationSwitch('signals', 'toggle'),
  'notifications/trades/on': notificationSwitch('trades', 'on'),
  'notifications/trades/off': notificationSwitch('trades', 'off'),
  'notifications/trades/toggle': notificationSwitch('trades', 'toggle'),
  'notifications/orders/on': notificationSwitch('orders', 'on'),
  'notifications/orders/off': notificationSwitch('orders', 'off'),
  'notifications/orders/toggle': notificationSwitch('orders', 'toggle'),
  'notifications/send-chat-test-notification': (_s, _b, now) => ({ set: { last_test_notification_at: now } }),
}
