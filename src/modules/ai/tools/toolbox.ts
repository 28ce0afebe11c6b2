import { jsonSchema, type ToolSet, tool } from 'ai'
import type { RecordedToolCall } from '../../../db/schema/index.ts'
import { UpstreamError } from '../../../lib/upstream/client.ts'
import { compileValidator, summarizeErrors } from '../../../lib/validation.ts'
import type { AgentName } from '../ai.schemas.ts'
import { bounded } from './bounded.ts'
import type { ToolContext, ToolDefinition } from './tool-definition.ts'
import { ToolRefusal } from './tool-definition.ts'

export const KNOWLEDGE_BASE_TOOLS = ['search_knowledge_base', 'get_knowledge_base_article'] as const
export const TRADING_TOOLS = [
  'list_strategies',
  'get_strategy',
  'list_broker_accounts',
  'get_account_balance',
  'get_account_pnl',
] as const
export const ASSISTANT_ACCOUNT_TOOLS = [
  'list_signals',
  'list_activities',
  'list_analysis',
  'list_news',
] as const
export const PRO_MARKET_TOOLS = [
  'get_markets',
  'get_tickers',
  'get_ticker',
  'get_sector',
  'get_market_calendar',
  'get_market_balance',
] as const

/**
 * The tools an agent offers (issue 12's lists): the knowledge base always; account tools only to a
 * signed-in user (the support agent never has any); market tools in the pro edition.
 */
export function toolNamesFor(agent: AgentName, signedIn: boolean, edition: 'standard' | 'pro'): string[] {
  if (agent === 'support' || !signedIn) return [...KNOWLEDGE_BASE_TOOLS]
  const names: string[] = [...KNOWLEDGE_BASE_TOOLS, ...TRADING_TOOLS]
  if (agent === 'assistant') names.push(...ASSISTANT_ACCOUNT_TOOLS)
  if (edition === 'pro') names.push(...PRO_MARKET_TOOLS)
  return names
}

export interface ToolLogger {
  warn(obj: object, msg: string): void
}

/** Every tool this service has, turned into AI SDK tools for one call with its context. */
export function createToolbox(definitions: readonly ToolDefinition[], log: ToolLogger) {
  const byName = new Map(definitions.map((definition) => [definition.name, definition]))
  const validators = new Map(
    definitions.map((definition) => [definition.name, compileValidator(definition.input)]),
  )

  const asTool = (definition: ToolDefinition, context: ToolContext, record: RecordedToolCall[]) => {
    const validate = validators.get(definition.name) as (value: unknown) => Record<string, string[]>
    return tool({
      description: definition.description,
      inputSchema: jsonSchema<Record<string, unknown>>(definition.input as object, {
        validate: (value) => {
          const errors = validate(value)
          return Object.keys(errors).length === 0
            ? { success: true, value: value as Record<string, unknown> }
            : { success: false, error: new Error(summarizeErrors(errors)) }
        },
      }),
      // A failure is the model's to explain: it gets a plain `{error}` (never the cause) and the call goes on.
      execute: async (input) => {
        const started = performance.now()
        let ok = true
        try {
          return bounded(await definition.run(input, context))
        } catch (error) {
          if (error instanceof ToolRefusal) return { error: error.message, ...error.details }
          ok = false
          log.warn({ err: error, tool: definition.name }, 'AI tool failed')
          return {
            error:
              error instanceof UpstreamError
                ? 'The trading data service is not answering right now.'
                : 'The tool could not be run.',
          }
        } finally {
          record.push({ name: definition.name, ok, ms: Math.round(performance.now() - started) })
        }
      },
    })
  }

  return {
    /** The named tools for one call; what they do is recorded into `record` as they run. */
    toolSet(names: readonly string[], context: ToolContext, record: RecordedToolCall[]): ToolSet {
      const set: ToolSet = {}
      for (const name of names) {
        const definition = byName.get(name)
        if (!definition) throw new Error(`unknown AI tool "${name}"`)
        set[name] = asTool(definition, context, record)
      }
      return set
    },
  }
}

export type Toolbox = ReturnType<typeof createToolbox>
