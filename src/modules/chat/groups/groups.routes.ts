import type { TypeBoxTypeProvider } from '@fastify/type-provider-typebox'
import type { FastifyInstance } from 'fastify'
import { Type } from 'typebox'
import { commonErrorResponses, MessageResponse } from '../../../lib/http-schemas.ts'
import { signedInUser, type ThrottleRule } from '../../../plugins/guards.ts'
import { GroupParams, GroupResponse } from '../chat.schemas.ts'
import {
  CreateGroupBody,
  GroupStatusResponse,
  GroupView,
  JoinResponse,
  SidebarResponse,
  UpdateGroupBody,
} from './groups.schemas.ts'
import type { GroupsService } from './groups.service.ts'

const tags = ['chat']
const config = { auth: 'session' } as const

// Each group lets its owner mail invitations: a user makes at most 10 groups an hour.
const groupCreationThrottle: ThrottleRule = {
  name: 'group-creation',
  max: 10,
  decaySeconds: 3600,
  key: (request) => String(request.user?.id),
}

/** Groups: create, view, change, delete, join, leave, status, and the sidebar of conversations. */
export default async function groupsRoutes(fastify: FastifyInstance, { groups }: { groups: GroupsService }) {
  const app = fastify.withTypeProvider<TypeBoxTypeProvider>()

  app.post(
    '/api/group',
    {
      config: { ...config, throttle: groupCreationThrottle },
      schema: {
        tags,
        summary: 'Create a group; the caller owns it',
        body: CreateGroupBody,
        response: { 201: GroupResponse, ...commonErrorResponses },
      },
    },
    async (request, reply) =>
      reply.code(201).send({ data: await groups.create(signedInUser(request), request.body) }),
  )

  app.get(
    '/api/group/:group',
    {
      config,
      schema: {
        tags,
        summary: 'A group, its members and (for members) the newest messages; marks it read',
        params: GroupParams,
        response: { 200: Type.Object({ data: GroupView }), ...commonErrorResponses },
      },
    },
    async (request) => ({ data: await groups.show(signedInUser(request), request.params.group) }),
  )

  app.put(
    '/api/group/:group',
    {
      config,
      schema: {
        tags,
        summary: 'Change a group (its owner)',
        params: GroupParams,
        body: UpdateGroupBody,
        response: { 200: GroupResponse, ...commonErrorResponses },
      },
    },
    async (request) => ({
      data: await groups.update(signedInUser(request), request.params.group, request.body),
    }),
  )

  app.delete(
    '/api/group/:group',
    {
      config,
      schema: {
        tags,
        summary: 'Delete a group with its messages and files (its owner or a site admin); emits GroupDeleted',
        params: GroupParams,
        response: { 200: MessageResponse, ...commonErrorResponses },
      },
    },
    async (request) => {
      await groups.delete(signedInUser(request), request.params.group)
      return { message: 'The group has been deleted.' }
    },
  )

  app.post(
    '/api/group/:group/join',
    {
      config,
      schema: {
        tags,
        summary: 'Join a public group, or ask to join a private one',
        params: GroupParams,
        response: { 200: JoinResponse, ...commonErrorResponses },
      },
    },
    async (request) => ({ data: await groups.join(signedInUser(request), request.params.group) }),
  )

  app.delete(
    '/api/group/:group/leave',
    {
      config,
      schema: {
        tags,
        summary: 'Leave a group; emits UserLeftGroup',
        params: GroupParams,
        response: { 200: MessageResponse, ...commonErrorResponses },
      },
    },
    async (request) => {
      const outcome = await groups.leave(signedInUser(request), request.params.group)
      return {
        message:
          outcome === 'deleted'
            ? 'You left the group; it had no other member and was deleted.'
            : 'You left the group.',
      }
    },
  )

  app.get(
    '/api/group/:group/status',
    {
      config,
      schema: {
        tags,
        summary: "The caller's membership, join request, unread and online counts",
        params: GroupParams,
        response: { 200: GroupStatusResponse, ...commonErrorResponses },
      },
    },
    async (request) => ({ data: await groups.status(signedInUser(request), request.params.group) }),
  )

  app.get(
    '/api/sidebar-conversations',
    {
      config,
      schema: {
        tags,
        summary: "The caller's groups, most recent activity first, with unread counts",
        response: { 200: SidebarResponse, ...commonErrorResponses },
      },
    },
    async (request) => ({ data: await groups.sidebar(signedInUser(request)) }),
  )
}
