/** One outgoing mail; every mail has a plain-text and an HTML part. */
export interface MailMessage {
  to: string
  subject: string
  text: string
  html: string
  /** Sets Reply-To, e.g. a support mail answered straight to the person who wrote. */
  replyTo?: string
}

/** The parts of Laravel's MailMessage: a greeting, paragraphs, an optional button, closing paragraphs. */
export interface MailContent {
  subject: string
  greeting?: string
  lines: string[]
  action?: { label: string; url: string }
  outro?: string[]
}

const HTML_ESCAPES: Record<string, string> = {
  '&': '&amp;',
  '<': '&lt;',
  '>': '&gt;',
  '"': '&quot;',
  "'": '&#39;',
}

/** Escapes text for HTML: whatever a user typed is shown, never interpreted. */
export const escapeHtml = (value: string) => value.replace(/[&<>"']/g, (c) => HTML_ESCAPES[c] ?? c)

const paragraph = (line: string) =>
  `<p style="margin:0 0 16px;line-height:1.5">${escapeHtml(line).replaceAll('\n', '<br>')}</p>`

/** Renders one content into a message for `to`: the text part and a simple, escaped HTML part. */
export function renderMail(to: string, content: MailContent): MailMessage {
  const greeting = content.greeting ?? 'Hello!'
  const outro = content.outro ?? []
  const text = [
    greeting,
    '',
    ...content.lines.flatMap((line) => [line, '']),
    ...(content.action ? [`${content.action.label}: ${content.action.url}`, ''] : []),
    ...outro.flatMap((line) => [line, '']),
  ]
    .join('\n')
    .trimEnd()
  const button = content.action
    ? `<p style="margin:24px 0"><a href="${escapeHtml(content.action.url)}" style="background:#2d3748;color:#fff;padding:10px 18px;border-radius:4px;text-decoration:none">${escapeHtml(content.action.label)}</a></p>` +
      `<p style="font-size:12px;color:#718096">If the button does not work, paste this link into your browser: ${escapeHtml(content.action.url)}</p>`
    : ''
  const html = `<!doctype html><html><body style="font-family:sans-serif;color:#2d3748;max-width:560px;margin:0 auto;padding:24px">
<h1 style="font-size:18px">${escapeHtml(greeting)}</h1>
${content.lines.map(paragraph).join('\n')}
${button}
${outro.map(paragraph).join('\n')}
</body></html>`
  return { to, subject: content.subject, text: `${text}\n`, html }
}
