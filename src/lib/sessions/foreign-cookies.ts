import type { UserRow } from '../../db/schema/index.ts'

/** A request's cookies by name, as the `cookie` package parses them. */
export type Cookies = Readonly<Record<string, string | undefined>>

/** What a reader of foreign cookies may do to the request it is given: only through the session plugin. */
export interface SessionAdoption {
  /**
   * Puts the live session `sessionToken` names (a token of this service's) on the request, its user
   * too, as if the request had carried it; with `rememberToken`, the answer sets that remembered
   * device's cookie. False when no live session has that token: nothing is put on the request.
   */
  adopt(sessionToken: string, rememberToken?: string): Promise<boolean>
  /**
   * Starts a session for `user` on a newly remembered device, as a sign-in with "remember me" does,
   * without touching the request: its two cookie values, for `adopt`.
   */
  startRemembered(user: UserRow): Promise<{ sessionToken: string; rememberToken: string }>
}

/**
 * The session plugin's one hook for the cookies of the system this service replaced (the Laravel
 * original, during its cutover window): read only for a request that no session or remembered device
 * of this service's own let in.
 */
export interface ForeignCookies {
  /** Whether the request carries cookies this reads, and they are still read; no decryption. */
  carries(cookies: Cookies): boolean
  /**
   * Lets the request in through `adoption` when its cookies name a session or a remembered user;
   * answers the Set-Cookie lines its answer carries (the foreign cookies that were read, expired).
   */
  restore(cookies: Cookies, adoption: SessionAdoption): Promise<readonly string[]>
  /** The CSRF token inside an X-XSRF-TOKEN value the replaced system wrote; undefined for anything else. */
  csrfToken(header: string): string | undefined
  /** The user signed out, or had every session ended: what the replaced system remembered them by is forgotten. */
  forgetUser(userId: number): Promise<void>
}
