import { createOpenAICompatible } from '@ai-sdk/openai-compatible'
import type { LanguageModelV4 } from '@ai-sdk/provider'
import type { Config } from '../../config.ts'
import { createOfflineModel, OFFLINE_MODEL_ID } from './offline-model.ts'

/** The model every AI call uses, and the name its records carry. */
export interface ConfiguredModel {
  model: LanguageModelV4
  name: string
}

/** The OpenAI-compatible model server AI_BASE_URL names, or the built-in offline model without one. */
export function configuredModel(config: Config): ConfiguredModel {
  // The SDK prints provider warnings to the console; they would bypass the log's redaction.
  ;(globalThis as { AI_SDK_LOG_WARNINGS?: boolean }).AI_SDK_LOG_WARNINGS = false
  const server = config.ai.model
  if (!server) return { model: createOfflineModel(), name: OFFLINE_MODEL_ID }
  const provider = createOpenAICompatible({
    name: 'model-server',
    baseURL: server.baseUrl,
    apiKey: server.apiKey,
    // Token counts arrive in the stream's last chunk only when asked for.
    includeUsage: true,
  })
  return { model: provider.chatModel(server.name), name: server.name }
}
