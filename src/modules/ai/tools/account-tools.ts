import { Type } from 'typebox'
import type { ActivitiesService } from '../../activities/activities.service.ts'
import { accountRoutes } from '../../proxy/accounts/accounts.routes.ts'
import { conditionRoutes } from '../../proxy/conditions/conditions.routes.ts'
import { marketDataRoutes } from '../../proxy/market-data/market-data.routes.ts'
import { UpstreamId } from '../../proxy/proxy.schemas.ts'
import { strategyRoutes } from '../../proxy/strategies/strategies.routes.ts'
import { MAX_TOOL_ITEMS } from './bounded.ts'
import type { ProxyCaller } from './proxy-reads.ts'
import { routeOf } from './proxy-reads.ts'
import { accountOf, define } from './tool-definition.ts'

const none = Type.Object({})
const accountInput = Type.Object({ account_id: UpstreamId })

/** Lists the chat analyses of the caller's groups (the analysis module's `GET /api/analysis`). */
export type AnalysisLister = (userId: number, perPage: number) => Promise<unknown[]>

/** The signed-in user's own data: strategies, broker accounts, signals, activities, analyses, news. */
export function accountTools(call: ProxyCaller, activities: ActivitiesService, analyses: AnalysisLister) {
  const strategies = routeOf(strategyRoutes, '/api/strategies')
  const strategy = routeOf(strategyRoutes, '/api/strategies/:id')
  const accounts = routeOf(accountRoutes, '/api/accounts')
  const balance = routeOf(accountRoutes, '/api/accounts/:accountId/balance')
  const pnl = routeOf(accountRoutes, '/api/accounts/:accountId/pnl')
  const signals = routeOf(conditionRoutes, '/api/signals')
  const news = routeOf(marketDataRoutes, '/api/news')
  return [
    define({
      name: 'list_strategies',
      description: "The user's trading strategies.",
      input: none,
      run: (_input, context) => call(strategies, context),
    }),
    define<{ strategy_id: string }>({
      name: 'get_strategy',
      description: "One of the user's strategies, by id.",
      input: Type.Object({ strategy_id: UpstreamId }),
      run: ({ strategy_id }, context) => call(strategy, context, { params: { id: strategy_id } }),
    }),
    define({
      name: 'list_broker_accounts',
      description: "The user's broker accounts.",
      input: none,
      run: (_input, context) => call(accounts, context),
    }),
    define<{ account_id: string }>({
      name: 'get_account_balance',
      description: "The balance of one of the user's broker accounts.",
      input: accountInput,
      run: ({ account_id }, context) => call(balance, context, { params: { accountId: account_id } }),
    }),
    define<{ account_id: string }>({
      name: 'get_account_pnl',
      description: "The profit and loss of one of the user's broker accounts.",
      input: accountInput,
      run: ({ account_id }, context) => call(pnl, context, { params: { accountId: account_id } }),
    }),
    define({
      name: 'list_signals',
      description: "The signals of the user's strategies.",
      input: none,
      run: (_input, context) => call(signals, context),
    }),
    define({
      name: 'list_activities',
      description: "The user's latest activities (what happened in their account), newest first.",
      input: none,
      run: (_input, context) => activities.latest(accountOf(context).id, MAX_TOOL_ITEMS),
    }),
    define({
      name: 'list_analysis',
      description: "The latest AI chart analyses asked for in the user's chat groups, newest first.",
      input: none,
      run: (_input, context) => analyses(accountOf(context).id, 10),
    }),
    define<{ page?: number }>({
      name: 'list_news',
      description: 'Market news, newest first, one page at a time.',
      input: Type.Object({ page: Type.Optional(Type.Integer({ minimum: 1, maximum: 100 })) }),
      run: async ({ page }, context) => {
        const body = (await call(news, context, { query: { page: page ?? 1 } })) as { data?: unknown } | null
        return body?.data ?? []
      },
    }),
  ]
}
