import { DefaultChatTransport, readUIMessageStream } from 'ai'
import { config } from './config.js'
import { fetchCsrfCookie, readCookie } from './http.js'

// What useChat would use; fetch, not axios, so the CSRF header is set by hand.
const transport = new DefaultChatTransport({
  api: `${config.apiUrl}/api/ai/agents/support`,
  // Cross-origin fetch sends no cookies by default: no session, no CSRF check passed.
  credentials: 'include',
  // Read at each request: the XSRF-TOKEN cookie changes at sign-in and sign-out.
  headers: () => ({
    'X-XSRF-TOKEN': readCookie('XSRF-TOKEN') ?? '',
    'X-Requested-With': 'XMLHttpRequest',
    Accept: 'application/json',
  }),
})

let asked = 0

/**
 * Asks the support agent `question`; `onText` gets the answer's text so far as it streams. Resolves
 * when the stream ends.
 */
export async function askSupport(question, onText) {
  if (readCookie('XSRF-TOKEN') === undefined) await fetchCsrfCookie()
  const stream = await transport.sendMessages({
    chatId: 'example',
    trigger: 'submit-message',
    messageId: undefined,
    abortSignal: undefined,
    // Not crypto.randomUUID(): a page on plain http other than localhost is no secure context and lacks it.
    messages: [{ id: `question-${++asked}`, role: 'user', parts: [{ type: 'text', text: question }] }],
  })
  for await (const message of readUIMessageStream({ stream, terminateOnError: true })) {
    onText(
      message.parts
        .filter((part) => part.type === 'text')
        .map((part) => part.text)
        .join(''),
    )
  }
}
