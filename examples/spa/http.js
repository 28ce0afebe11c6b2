import axios from 'axios'
import { config } from './config.js'

const CSRF_COOKIE_PATH = '/guard/csrf-cookie'
const UNSAFE_METHODS = new Set(['post', 'put', 'patch', 'delete'])

/** A cookie of this page's (the SPA's host, or the parent domain SESSION_DOMAIN names), decoded. */
export function readCookie(name) {
  const pair = document.cookie.split('; ').find((cookie) => cookie.startsWith(`${name}=`))
  return pair ? decodeURIComponent(pair.slice(name.length + 1)) : undefined
}

/** The API client every part of the example uses. */
export const http = axios.create({
  baseURL: config.apiUrl,
  // Send and keep the API's cookies across origins (app. and api. are different origins).
  withCredentials: true,
  // Axios echoes the XSRF-TOKEN cookie as X-XSRF-TOKEN only to its own origin unless told to.
  withXSRFToken: true,
  headers: {
    // Laravel's bootstrap.js sets it; with it a failure answers JSON instead of a redirect.
    'X-Requested-With': 'XMLHttpRequest',
    Accept: 'application/json',
  },
})

/** GET /guard/csrf-cookie: a session and its XSRF-TOKEN cookie. */
export const fetchCsrfCookie = () => http.get(CSRF_COOKIE_PATH)

// The first write of a visit needs the cookie: fetch it first when the page cannot see one.
http.interceptors.request.use(async (request) => {
  if (UNSAFE_METHODS.has(request.method ?? 'get') && readCookie('XSRF-TOKEN') === undefined) {
    await fetchCsrfCookie()
  }
  return request
})

// 419: the session (and so its CSRF token) expired or was replaced in another tab. A fresh cookie and
// one more try, as the app does; a second 419 is a real failure.
http.interceptors.response.use(undefined, async (error) => {
  const request = error.config
  if (error.response?.status !== 419 || !request || request.retriedAfter419) throw error
  request.retriedAfter419 = true
  await fetchCsrfCookie()
  return http(request)
})
