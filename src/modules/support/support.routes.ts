import type { TypeBoxTypeProvider } from '@fastify/type-provider-typebox'
import type { FastifyInstance, FastifyRequest } from 'fastify'
import { commonErrorResponses, MessageResponse } from '../../lib/http-schemas.ts'
import { throttleAddress, throttleNetwork } from '../../lib/rate-limit/address.ts'
import { signedInUser, type ThrottleRule } from '../../plugins/guards.ts'
import { ContactFormBody, ReportIssueBody, SupportRequestBody } from './support.schemas.ts'
import type { Origin } from './support.service.ts'

// Each form mails two people: the public one is held to 5 a minute per address, the signed-in ones
// to 10 a minute per user, so none can be used to flood the desk or an inbox.
const contactThrottle: ThrottleRule = {
  name: 'contact-form',
  max: 5,
  decaySeconds: 60,
  key: (request) => throttleAddress(request.ip),
  networkKey: (request) => throttleNetwork(request.ip),
}
const ticketThrottle: ThrottleRule = {
  name: 'support-tickets',
  max: 10,
  decaySeconds: 60,
  key: (request) => String(request.user?.id),
}

const originOf = (request: FastifyRequest): Origin => ({
  ipAddress: request.ip ?? null,
  userAgent: request.headers['user-agent'] ?? null,
})

/** The contact form (public, CSRF-exempt), the support request and the issue report. */
export default async function supportRoutes(fastify: FastifyInstance) {
  const app = fastify.withTypeProvider<TypeBoxTypeProvider>()
  const { support } = app.services
  const tags = ['support']
  const response = { 200: MessageResponse, ...commonErrorResponses }

  app.post(
    '/api/contact-form',
    {
      // The spec's one public form: a page without the SPA's CSRF cookie, of any origin (a marketing
      // site), may post it.
      config: { csrf: false, anyOrigin: true, throttle: contactThrottle },
      schema: {
        tags,
        summary: 'Write to support (mails ContactFormSubmitted)',
        body: ContactFormBody,
        response,
      },
    },
    async (request) => {
      await support.contact(request.body, request.user, originOf(request))
      return { message: 'Thank you for your message. We will get back to you soon.' }
    },
  )

  app.post(
    '/api/support-request',
    {
      config: { auth: 'session', throttle: ticketThrottle },
      schema: { tags, summary: 'Ask for help (mails SupportRequested)', body: SupportRequestBody, response },
    },
    async (request) => {
      await support.supportRequest(signedInUser(request), request.body, originOf(request))
      return { message: 'Your support request has been sent. We will get back to you soon.' }
    },
  )

  app.post(
    '/api/report-issue',
    {
      config: { auth: 'session', throttle: ticketThrottle },
      schema: { tags, summary: 'Report a problem (mails IssueReported)', body: ReportIssueBody, response },
    },
    async (request) => {
      await support.reportIssue(signedInUser(request), request.body, originOf(request))
      return { message: 'Thank you for reporting the issue. We will look into it.' }
    },
  )
}
