import type { Pool } from 'undici'

/** The password of every user the benchmarks create. */
export const BENCH_PASSWORD = 'bench password 1234'

export interface SignedInHeaders extends Record<string, string> {
  cookie: string
  'x-xsrf-token': string
}

/**
 * Signs in over HTTP as the app does (CSRF cookie, then login) and answers the headers a browser
 * would then send on every request: the cookies and the echoed XSRF token.
 */
export async function signIn(http: Pool, email: string): Promise<SignedInHeaders> {
  const cookies = new Map<string, string>()
  const keep = (setCookie: string | string[] | undefined) => {
    for (const line of [setCookie ?? []].flat()) {
      const [pair = ''] = line.split(';')
      const at = pair.indexOf('=')
      cookies.set(pair.slice(0, at), pair.slice(at + 1))
    }
  }
  const headers = (): SignedInHeaders => ({
    'content-type': 'application/json',
    accept: 'application/json',
    cookie: [...cookies].map(([k, v]) => `${k}=${v}`).join('; '),
    'x-xsrf-token': decodeURIComponent(cookies.get('XSRF-TOKEN') ?? ''),
  })
  const csrf = await http.request({ path: '/guard/csrf-cookie', method: 'GET' })
  await csrf.body.dump()
  keep(csrf.headers['set-cookie'])
  const login = await http.request({
    path: '/api/login',
    method: 'POST',
    headers: headers(),
    body: JSON.stringify({ email, password: BENCH_PASSWORD }),
  })
  await login.body.dump()
  if (login.statusCode !== 200) throw new Error(`login answered ${login.statusCode}`)
  keep(login.headers['set-cookie'])
  return headers()
}
