import { Type } from 'typebox'
import { TickerSymbol, UpstreamId } from '../proxy.schemas.ts'

export const StrategyParams = Type.Object({ id: UpstreamId })
export const StrategyActionParams = Type.Object({ strategy: UpstreamId })
export const StrategySearchParams = Type.Object({ symbol: TickerSymbol })

/**
 * The spec's 35 strategy actions: each a POST to `/api/strategy/{strategy}/<suffix>`, forwarded to
 * the same-named upstream path with its JSON body.
 */
export const STRATEGY_ACTIONS = [
  'settings/update-name',
  'settings/update-symbol',
  'settings/update-direction',
  'settings/update-timeframe',
  'settings/update-allocation',
  'settings/update-sizing-ordering',
  'settings/update-trailing-stop',
  'settings/update-order-cancelation',
  'settings/update-chat-webhook-url',
  'settings/update-risk-management',
  'retain',
  'retain-stop',
  'deploy',
  'duplicate',
  'status/on',
  'status/off',
  ...(['signals', 'trades', 'orders'] as const).flatMap((kind) =>
    (['on', 'off', 'toggle'] as const).map((move) => `${kind}/${move}` as const),
  ),
  ...(['signals', 'trades', 'orders'] as const).flatMap((kind) =>
    (['on', 'off', 'toggle'] as const).map((move) => `notifications/${kind}/${move}` as const),
  ),
  'notifications/send-chat-test-notification',
] as const
