// Vite puts the VITE_* variables of the build's environment (or of a .env file beside index.html)
// into import.meta.env at build time, as in the Laravel app; the defaults suit `npm start` on
// http://localhost:8000 with the example on Vite's http://localhost:5173.
const env = import.meta.env

const apiUrl = (env.VITE_API_URL ?? 'http://localhost:8000').replace(/\/+$/, '')
const scheme = env.VITE_REVERB_SCHEME ?? new URL(apiUrl).protocol.replace(':', '')

export const config = {
  apiUrl,
  reverb: {
    key: env.VITE_REVERB_APP_KEY ?? '',
    host: env.VITE_REVERB_HOST ?? new URL(apiUrl).hostname,
    port: Number(env.VITE_REVERB_PORT ?? (new URL(apiUrl).port || (scheme === 'https' ? 443 : 80))),
    scheme,
  },
}
