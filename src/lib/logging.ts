import type { FastifyServerOptions } from 'fastify'

// Query parameters whose values are secrets (signed links, reset tokens) are masked in logged URLs.
const SECRET_QUERY = /([?&](?:token|signature|password|code|secret)=)[^&]*/gi

export const redactUrl = (url: string) => url.replace(SECRET_QUERY, '$1[REDACTED]')

/** pino settings: request id on every line, and no cookie, token, password or session id ever written. */
export function loggerOptions(level: string): FastifyServerOptions['logger'] {
  return {
    level,
    redact: {
      paths: [
        'req.headers.cookie',
        'req.headers.authorization',
        'req.headers["x-xsrf-token"]',
        'req.headers["x-csrf-token"]',
        'res.headers["set-cookie"]',
        '*.password',
        '*.password_confirmation',
        '*.current_password',
        '*.token',
        '*._token',
      ],
      censor: '[REDACTED]',
    },
    serializers: {
      req: (req: { method: string; url: string; ip?: string; headers: Record<string, unknown> }) => ({
        method: req.method,
        url: redactUrl(req.url),
        ip: req.ip,
        user_agent: req.headers['user-agent'],
      }),
    },
  }
}
