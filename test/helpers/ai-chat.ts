import {
  DefaultChatTransport as CurrentTransport,
  readUIMessageStream as readCurrent,
  type UIMessage,
} from 'ai'
import { readUIMessageStream as readV5, DefaultChatTransport as V5Transport } from 'ai5'
import type { TestClient } from './client.ts'

/** Which client parses the stream: the current `ai`, or ai@5.0.0 with its strict chunk schemas. */
export type SdkVersion = 'current' | 'v5'

export interface AgentAnswer {
  /** Every chunk, as the SDK's own parsing (schema-checked) handed it over. */
  chunks: Array<{ type: string; [key: string]: unknown }>
  /** The assistant message the SDK assembled from them. */
  message: UIMessage | undefined
  /** The text parts of that message, joined. */
  text: string
}

/** A user message as `useChat` sends it. */
export const userMessage = (text: string, id = `msg_${Math.random().toString(36).slice(2)}`): UIMessage => ({
  id,
  role: 'user',
  parts: [{ type: 'text', text }],
})

/** The headers the SPA's session gives a request: its cookies, the XSRF echo, its origin. */
export async function sessionHeaders(client: TestClient): Promise<Record<string, string>> {
  if (!client.cookies.has('XSRF-TOKEN')) await client.csrf()
  return {
    cookie: client.cookieHeader,
    'x-xsrf-token': decodeURIComponent(client.cookies.get('XSRF-TOKEN') ?? ''),
    origin: client.origin,
    accept: 'application/json',
  }
}

/**
 * Asks an agent as the app's `useChat` does: the SDK's DefaultChatTransport posts the UI messages and
 * parses the answer with its own (strict, for ai@5.0.0) chunk schemas; a schema violation throws.
 */
export async function askAgent(
  client: TestClient,
  agent: string,
  messages: UIMessage[],
  options: { sdk?: SdkVersion; signal?: AbortSignal; onChunk?: (chunk: { type: string }) => void } = {},
): Promise<AgentAnswer> {
  const sdk = options.sdk ?? 'current'
  const api = `${client.baseUrl}/api/ai/agents/${agent}`
  const headers = await sessionHeaders(client)
  const request = {
    chatId: 'chat_test',
    messages,
    trigger: 'submit-message' as const,
    messageId: undefined,
    abortSignal: options.signal,
    headers,
    body: undefined,
    metadata: undefined,
  }
  const stream =
    sdk === 'v5'
      ? await new V5Transport({ api }).sendMessages(request as never)
      : await new CurrentTransport({ api }).sendMessages(request as never)
  const chunks: AgentAnswer['chunks'] = []
  const [forChunks, forMessage] = (stream as ReadableStream).tee()
  const collect = (async () => {
    for await (const chunk of forChunks as unknown as AsyncIterable<AgentAnswer['chunks'][number]>) {
      chunks.push(chunk)
      options.onChunk?.(chunk)
    }
  })()
  let message: UIMessage | undefined
  const snapshots = (
    sdk === 'v5' ? readV5({ stream: forMessage as never }) : readCurrent({ stream: forMessage as never })
  ) as AsyncIterable<UIMessage>
  for await (const snapshot of snapshots) message = snapshot
  await collect
  const text = (message?.parts ?? [])
    .filter((part): part is { type: 'text'; text: string } => part.type === 'text')
    .map((part) => part.text)
    .join('')
  return { chunks, message, text }
}
