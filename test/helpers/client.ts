import { SPA_ORIGIN } from './build-test-app.ts'

export interface ClientResponse<T = any> {
  status: number
  headers: Headers
  data: T
  text: string
}

export interface RequestOptions {
  headers?: Record<string, string>
  /** A raw body sent as is (with the given content-type), instead of JSON. */
  raw?: string | Buffer
  /** Leave out the XSRF header even on a mutation. */
  withoutCsrf?: boolean
  /** Gives up after this long (the promise rejects with a TimeoutError), as a browser tab would. */
  timeoutMs?: number
}

/**
 * Behaves like the SPA's axios (`withCredentials`, `withXSRFToken`): keeps cookies, fetches the CSRF
 * cookie before its first mutation, echoes XSRF-TOKEN in X-XSRF-TOKEN, sends Accept and Origin.
 */
export class TestClient {
  readonly cookies = new Map<string, string>()
  readonly baseUrl: string
  readonly origin: string

  constructor(baseUrl: string, origin = SPA_ORIGIN) {
    this.baseUrl = baseUrl
    this.origin = origin
  }

  get<T = any>(path: string, options?: RequestOptions) {
    return this.request<T>('GET', path, undefined, options)
  }
  post<T = any>(path: string, body?: unknown, options?: RequestOptions) {
    return this.request<T>('POST', path, body, options)
  }
  put<T = any>(path: string, body?: unknown, options?: RequestOptions) {
    return this.request<T>('PUT', path, body, options)
  }
  patch<T = any>(path: string, body?: unknown, options?: RequestOptions) {
    return this.request<T>('PATCH', path, body, options)
  }
  delete<T = any>(path: string, body?: unknown, options?: RequestOptions) {
    return this.request<T>('DELETE', path, body, options)
  }

  /** The Cookie header this client sends: every cookie it keeps, as a browser would. */
  get cookieHeader(): string {
    return [...this.cookies].map(([k, v]) => `${k}=${v}`).join('; ')
  }

  /** GET /guard/csrf-cookie, as the app does before its first write. */
  async csrf(): Promise<void> {
    const res = await this.request('GET', '/guard/csrf-cookie')
    if (res.status !== 204) throw new Error(`csrf-cookie answered ${res.status}`)
  }

  async request<T = any>(
    method: string,
    path: string,
    body?: unknown,
    options: RequestOptions = {},
  ): Promise<ClientResponse<T>> {
    const mutation = !['GET', 'HEAD', 'OPTIONS'].includes(method)
    if (mutation && !options.withoutCsrf && !this.cookies.has('XSRF-TOKEN')) await this.csrf()
    const headers: Record<string, string> = {
      accept: 'application/json, text/plain, */*',
      'x-requested-with': 'XMLHttpRequest',
      origin: this.origin,
      referer: `${this.origin}/`,
    }
    if (this.cookies.size > 0) headers.cookie = this.cookieHeader
    const xsrf = this.cookies.get('XSRF-TOKEN')
    if (mutation && xsrf && !options.withoutCsrf) headers['x-xsrf-token'] = decodeURIComponent(xsrf)
    let payload: string | Buffer | undefined
    if (options.raw !== undefined) payload = options.raw
    else if (body !== undefined) {
      payload = JSON.stringify(body)
      headers['content-type'] = 'application/json'
    }
    Object.assign(headers, options.headers)
    const res = await fetch(`${this.baseUrl}${path}`, {
      method,
      headers,
      body: payload,
      redirect: 'manual',
      ...(options.timeoutMs ? { signal: AbortSignal.timeout(options.timeoutMs) } : {}),
    })
    this.storeCookies(res.headers)
    const text = await res.text()
    let data: any = text
    if ((res.headers.get('content-type') ?? '').includes('json') && text) data = JSON.parse(text)
    return { status: res.status, headers: res.headers, data, text }
  }

  private storeCookies(headers: Headers) {
    for (const line of headers.getSetCookie()) {
      const [pair = '', ...attributes] = line.split(';')
      const eq = pair.indexOf('=')
      const name = pair.slice(0, eq).trim()
      const value = pair.slice(eq + 1).trim()
      const expired = attributes.some((a) => {
        const [k = '', v = ''] = a.trim().split('=')
        if (k.toLowerCase() === 'max-age') return Number(v) <= 0
        if (k.toLowerCase() === 'expires') return new Date(v).getTime() <= Date.now()
        return false
      })
      if (expired || value === '') this.cookies.delete(name)
      else this.cookies.set(name, value)
    }
  }
}
