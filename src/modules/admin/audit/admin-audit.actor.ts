import type { FastifyRequest } from 'fastify'
import { signedInUser } from '../../../plugins/guards.ts'
import type { AuditActor } from './admin-audit.service.ts'

/**
 * The signed-in admin behind a request, for the audit record: id, email, and the client address as
 * Fastify's request.ip gives it (the X-Forwarded-For client only behind TRUSTED_PROXIES).
 */
export function auditActorOf(request: FastifyRequest): AuditActor {
  const admin = signedInUser(request)
  return { id: admin.id, email: admin.email, ipAddress: request.ip ?? null }
}
