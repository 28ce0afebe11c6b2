import type {
  LanguageModelV4,
  LanguageModelV4CallOptions,
  LanguageModelV4Content,
  LanguageModelV4FinishReason,
  LanguageModelV4Prompt,
  LanguageModelV4StreamPart,
  LanguageModelV4Usage,
} from '@ai-sdk/provider'

export const OFFLINE_MODEL_ID = 'offline-knowledge-base'

/** How much of an article the offline answer quotes. */
const QUOTE_CHARS = 700

interface Turn {
  /** The last user message's text. */
  question: string
  /** Images in the last user message. */
  images: number
  /** Tool results since that message, by tool name (the latest of each). */
  results: Map<string, unknown>
}

/** What the conversation asks now: the last user message and the tool results that followed it. */
function currentTurn(prompt: LanguageModelV4Prompt): Turn {
  const turn: Turn = { question: '', images: 0, results: new Map() }
  for (const message of prompt) {
    if (message.role === 'user') {
      turn.question = message.content
        .map((part) => (part.type === 'text' ? part.text : ''))
        .join(' ')
        .trim()
      turn.images = message.content.filter((part) => part.type === 'file').length
      turn.results = new Map()
    } else if (message.role === 'tool') {
      for (const part of message.content) {
        if (part.type !== 'tool-result') continue
        const output = part.output
        turn.results.set(part.toolName, output.type === 'json' ? output.value : null)
      }
    }
  }
  return turn
}

type Step = { kind: 'tool'; name: string; input: Record<string, unknown> } | { kind: 'text'; text: string }

interface FoundArticle {
  slug: string
  title: string
  content?: string
}

/**
 * The offline model's one decision per step, deterministic: search the knowledge base for the
 * question, open the best article, then answer with what it found. Without those tools (a chat
 * analysis) it says plainly that no model is configured.
 */
function nextStep(turn: Turn, tools: ReadonlySet<string>): Step {
  const searched = turn.results.get('search_knowledge_base')
  if (tools.has('search_knowledge_base') && searched === undefined && turn.question) {
    return { kind: 'tool', name: 'search_knowledge_base', input: { query: turn.question.slice(0, 200) } }
  }
  const hits = Array.isArray(searched) ? (searched as FoundArticle[]) : []
  const opened = turn.results.get('get_knowledge_base_article') as
    | FoundArticle
    | { error: string }
    | undefined
  if (tools.has('get_knowledge_base_article') && hits[0] && opened === undefined) {
    return { kind: 'tool', name: 'get_knowledge_base_article', input: { slug: hits[0].slug } }
  }
  if (opened && 'content' in opened && opened.content) {
    const quote =
      opened.content.length > QUOTE_CHARS ? `${opened.content.slice(0, QUOTE_CHARS)}…` : opened.content
    const more = hits.slice(1, 3).map((hit) => `- ${hit.title} (${hit.slug})`)
    return {
      kind: 'text',
      text: [
        `From the help article "${opened.title}":`,
        '',
        quote,
        ...(more.length ? ['', 'Related articles:', ...more] : []),
      ].join('\n'),
    }
  }
  if (tools.has('search_knowledge_base')) {
    return {
      kind: 'text',
      text: 'I could not find a help article about that. Try other words, or write to support from the Help page.',
    }
  }
  const images = turn.images === 1 ? ' and 1 image' : turn.images > 1 ? ` and ${turn.images} images` : ''
  return {
    kind: 'text',
    text: `No AI model is configured on this server, so this message${images} could not be analysed. The offline assistant only answers from the help articles.`,
  }
}

const words = (text: string) => text.split(/\s+/).filter(Boolean).length

function usage(prompt: LanguageModelV4Prompt, output: number): LanguageModelV4Usage {
  const input = words(JSON.stringify(prompt))
  return {
    inputTokens: { total: input, noCache: input, cacheRead: undefined, cacheWrite: undefined },
    outputTokens: { total: output, text: output, reasoning: undefined },
  }
}

const finishReason = (step: Step): LanguageModelV4FinishReason =>
  step.kind === 'tool' ? { unified: 'tool-calls', raw: 'tool_calls' } : { unified: 'stop', raw: 'stop' }

/**
 * The built-in model used when no model server is configured (`npm start`'s default): an AI SDK
 * language model, so the agents' whole path (tools, steps, stream, records) runs offline.
 */
export function createOfflineModel(): LanguageModelV4 {
  let calls = 0
  const plan = (options: LanguageModelV4CallOptions) => {
    options.abortSignal?.throwIfAborted()
    const tools = new Set((options.tools ?? []).map((entry) => entry.name))
    return { step: nextStep(currentTurn(options.prompt), tools), id: `offline-${++calls}` }
  }

  return {
    specificationVersion: 'v4',
    provider: 'offline',
    modelId: OFFLINE_MODEL_ID,
    supportedUrls: {},

    async doGenerate(options) {
      const { step, id } = plan(options)
      const content: LanguageModelV4Content[] =
        step.kind === 'tool'
          ? [{ type: 'tool-call', toolCallId: id, toolName: step.name, input: JSON.stringify(step.input) }]
          : [{ type: 'text', text: step.text }]
      return {
        content,
        finishReason: finishReason(step),
        usage: usage(options.prompt, step.kind === 'text' ? words(step.text) : 1),
        warnings: [],
      }
    },

    async doStream(options) {
      const { step, id } = plan(options)
      const parts: LanguageModelV4StreamPart[] = [{ type: 'stream-start', warnings: [] }]
      if (step.kind === 'tool') {
        parts.push({
          type: 'tool-call',
          toolCallId: id,
          toolName: step.name,
          input: JSON.stringify(step.input),
        })
      } else {
        parts.push({ type: 'text-start', id })
        // Word by word, as a model streams tokens.
        for (const piece of step.text.match(/\S+\s*|\s+/g) ?? [])
          parts.push({ type: 'text-delta', id, delta: piece })
        parts.push({ type: 'text-end', id })
      }
      parts.push({
        type: 'finish',
        finishReason: finishReason(step),
        usage: usage(options.prompt, step.kind === 'text' ? words(step.text) : 1),
      })
      const stream = new ReadableStream<LanguageModelV4StreamPart>({
        start(controller) {
          for (const part of parts) controller.enqueue(part)
          controller.close()
        },
      })
      return { stream }
    },
  }
}
