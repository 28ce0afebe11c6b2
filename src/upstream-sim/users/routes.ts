import type { FieldErrors } from '../../lib/validation.ts'
import {
  type Context,
  data,
  type Handler,
  invalid,
  missing,
  notAnObject,
  positiveId,
  type RouteEntry,
} from '../answers.ts'
import { STRATEGY_ACTIONS } from './actions.ts'
import { accountBalance, accountGrowth, accountPnl, signalsFor } from './series.ts'
import { payloadFields, type UserStore } from './store.ts'

/** Checks the condition payload; a strategy_id must name one of the caller's strategies. */
function conditionErrors(store: UserStore, ctx: Context): FieldErrors | null {
  if (notAnObject(ctx.rawBody)) return { body: ['The body must be a JSON object.'] }
  const strategyId = ctx.body.strategy_id
  if (strategyId === undefined || strategyId === null) return null
  if (typeof strategyId !== 'number' || !store.findStrategy(ctx.userId, strategyId)) {
    return { strategy_id: ['The selected strategy id is invalid.'] }
  }
  return null
}

/** Strategies, their actions, conditions, signals and broker accounts, over one user store. */
export function userRoutes(store: UserStore): RouteEntry[] {
  const strategyOr404 = (ctx: Context, name = 'id') => {
    const id = positiveId(ctx.params[name])
    return (id && store.findStrategy(ctx.userId, id)) || null
  }
  const conditionOr404 = (ctx: Context) => {
    const id = positiveId(ctx.params.id)
    return (id && store.findCondition(ctx.userId, id)) || null
  }
  const accountOr404 = (ctx: Context) => {
    const id = positiveId(ctx.params.id)
    return (id && store.findAccount(ctx.userId, id)) || null
  }
  return [
    ['GET', '/strategies', (ctx) => data(store.listStrategies(ctx.userId)), 'user'],
    [
      'POST',
      '/strategies',
      (ctx) => {
        if (notAnObject(ctx.rawBody)) return invalid({ body: ['The body must be a JSON object.'] })
        return data(store.createStrategy(ctx.userId, payloadFields(ctx.body)), 201)
      },
      'user',
    ],
    [
      'GET',
      '/strategies/search/:symbol',
      (ctx) => {
        const wanted = (ctx.params.symbol ?? '').toUpperCase()
        return data(store.listStrategies(ctx.userId).filter((s) => s.symbol.toUpperCase().includes(wanted)))
      },
      'user',
    ],
    [
      'GET',
      '/strategies/:id',
      (ctx) => {
        const strategy = strategyOr404(ctx)
        return strategy ? data(strategy) : missing('Strategy', ctx.params.id ?? '')
      },
      'user',
    ],
    [
      'PUT',
      '/strategies/:id',
      (ctx) => {
        const strategy = strategyOr404(ctx)
        if (!strategy) return missing('Strategy', ctx.params.id ?? '')
        if (notAnObject(ctx.rawBody)) return invalid({ body: ['The body must be a JSON object.'] })
        return data(store.updateStrategy(ctx.userId, strategy, payloadFields(ctx.body)))
      },
      'user',
    ],
    [
      'DELETE',
      '/strategies/:id',
      (ctx) => {
        const strategy = strategyOr404(ctx)
        if (!strategy) return missing('Strategy', ctx.params.id ?? '')
        store.deleteStrategy(ctx.userId, strategy.id)
        return { status: 204, body: undefined }
      },
      'user',
    ],
    [
      'GET',
      '/strategy/:id/conditions',
      (ctx) => {
        const strategy = strategyOr404(ctx)
        return strategy
          ? data(store.listConditions(ctx.userId, strategy.id))
          : missing('Strategy', ctx.params.id ?? '')
      },
      'user',
    ],
    [
      'GET',
      '/strategy/:id/activities',
      (ctx) => {
        const strategy = strategyOr404(ctx)
        return strategy
          ? data(store.activities(ctx.userId, strategy.id))
          : missing('Strategy', ctx.params.id ?? '')
      },
      'user',
    ],
    [
      'POST',
      '/strategy/:id/clear-conditions-readings',
      (ctx) => {
        const strategy = strategyOr404(ctx)
        if (!strategy) return missing('Strategy', ctx.params.id ?? '')
        const conditions = store.listConditions(ctx.userId, strategy.id)
        for (const condition of conditions) store.updateCondition(condition, { reading: null, read_at: null })
        store.updateStrategy(ctx.userId, strategy, {}, 'clear-conditions-readings')
        return data({ strategy_id: strategy.id, cleared: conditions.length, conditions })
      },
      'user',
    ],
    ...Object.entries(STRATEGY_ACTIONS).map(([suffix, action]): [string, string, Handler, 'user'] => [
      'POST',
      `/strategy/:id/${suffix}`,
      (ctx) => {
        const strategy = strategyOr404(ctx)
        if (!strategy) return missing('Strategy', ctx.params.id ?? '')
        const result = action(strategy, ctx.body, store.stamp())
        if ('invalid' in result) return invalid(result.invalid)
        if ('duplicate' in result) {
          const { id: _id, created_at: _c, updated_at: _u, ...fields } = strategy
          const copy = store.createStrategy(ctx.userId, {
            ...structuredClone(fields),
            name: `${strategy.name} (copy)`,
            status: 'off',
            deployed: false,
            deployed_at: null,
            duplicated_from: strategy.id,
          })
          store.updateStrategy(ctx.userId, strategy, {}, suffix)
          return data(copy)
        }
        return data(store.updateStrategy(ctx.userId, strategy, result.set, suffix))
      },
      'user',
    ]),

    ['GET', '/conditions', (ctx) => data(store.listConditions(ctx.userId)), 'user'],
    [
      'POST',
      '/conditions',
      (ctx) => {
        const errors = conditionErrors(store, ctx)
        return errors
          ? invalid(errors)
          : data(store.createCondition(ctx.userId, payloadFields(ctx.body)), 201)
      },
      'user',
    ],
    [
      'GET',
      '/conditions/:id',
      (ctx) => {
        const condition = conditionOr404(ctx)
        return condition ? data(condition) : missing('Condition', ctx.params.id ?? '')
      },
      'user',
    ],
    [
      'PUT',
      '/conditions/:id',
      (ctx) => {
        const condition = conditionOr404(ctx)
        if (!condition) return missing('Condition', ctx.params.id ?? '')
        const errors = conditionErrors(store, ctx)
        return errors ? invalid(errors) : data(store.updateCondition(condition, payloadFields(ctx.body)))
      },
      'user',
    ],
    [
      'DELETE',
      '/conditions/:id',
      (ctx) => {
        const condition = conditionOr404(ctx)
        if (!condition) return missing('Condition', ctx.params.id ?? '')
        store.deleteCondition(ctx.userId, condition.id)
        return { status: 204, body: undefined }
      },
      'user',
    ],
    ['GET', '/signals', (ctx) => data(signalsFor(store.listStrategies(ctx.userId))), 'user'],

    [
      'GET',
      '/accounts',
      (ctx) => data(store.accounts(ctx.userId).map(({ seed: _seed, ...account }) => account)),
      'user',
    ],
    ['GET', '/accounts/balances', (ctx) => data(store.accounts(ctx.userId).map(accountBalance)), 'user'],
    [
      'GET',
      '/accounts/:id/balance',
      (ctx) => {
        const account = accountOr404(ctx)
        return account ? data(accountBalance(account)) : missing('Account', ctx.params.id ?? '')
      },
      'user',
    ],
    [
      'GET',
      '/accounts/:id/growth',
      (ctx) => {
        const account = accountOr404(ctx)
        return account ? data(accountGrowth(account)) : missing('Account', ctx.params.id ?? '')
      },
      'user',
    ],
    [
      'GET',
      '/accounts/:id/pnl',
      (ctx) => {
        const account = accountOr404(ctx)
        return account ? data(accountPnl(account)) : missing('Account', ctx.params.id ?? '')
      },
      'user',
    ],
  ]
}
