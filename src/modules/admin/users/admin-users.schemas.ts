import { type Static, Type } from 'typebox'
import { RegisterBody } from '../../auth/auth.schemas.ts'
import { UserResponse } from '../../users/users.schemas.ts'
import { AuditReason } from '../audit/admin-audit.schemas.ts'

export const DEFAULT_PER_PAGE = 15

const Role = Type.Enum(['user', 'admin'], { description: '`admin` may use the admin routes.' })

/** `GET /api/users`: filters and the page. */
export const ListUsersQuery = Type.Object({
  q: Type.Optional(
    Type.String({ maxLength: 255, description: 'Part of the name or email, any case.', examples: ['ada'] }),
  ),
  role: Type.Optional(Role),
  blocked: Type.Optional(
    Type.Enum(['true', 'false', '1', '0'], {
      description: 'Only blocked (true, 1) or unblocked (false, 0) users.',
    }),
  ),
  per_page: Type.Optional(
    Type.Integer({ minimum: 1, maximum: 100, description: `Default ${DEFAULT_PER_PAGE}.` }),
  ),
  page: Type.Optional(Type.Integer({ minimum: 1, maximum: 10_000_000 })),
})
export type ListUsersQuery = Static<typeof ListUsersQuery>

/** `{id}` and `{user}` of the admin routes: a user id (anything else names no route: 404). */
export const UserIdParams = Type.Object({
  id: Type.Integer({ minimum: 1, maximum: Number.MAX_SAFE_INTEGER }),
})
export const UserParams = Type.Object({
  user: Type.Integer({ minimum: 1, maximum: Number.MAX_SAFE_INTEGER }),
})

const IsAdmin = Type.Boolean({ description: 'Makes the user an admin; false by default.' })

/** `POST /api/users`: registration's rules, and the role. */
export const CreateUserBody = Type.Object({
  ...RegisterBody.properties,
  is_admin: Type.Optional(IsAdmin),
  reason: Type.Optional(AuditReason),
})
export type CreateUserBody = Static<typeof CreateUserBody>

/** `PUT /api/users/{id}`: name and email as on the profile; a password or role only when given. */
export const UpdateUserBody = Type.Object({
  name: RegisterBody.properties.name,
  email: RegisterBody.properties.email,
  password: Type.Optional(RegisterBody.properties.password),
  password_confirmation: RegisterBody.properties.password_confirmation,
  is_admin: Type.Optional(IsAdmin),
  reason: Type.Optional(AuditReason),
})
export type UpdateUserBody = Static<typeof UpdateUserBody>

export const ChangeRoleBody = Type.Object({ role: Role, reason: Type.Optional(AuditReason) })
export type ChangeRoleBody = Static<typeof ChangeRoleBody>

/** A user as admins see them: the app's user object plus whether (and since when) they are blocked. */
export const AdminUserResponse = Type.Object({
  ...UserResponse.properties,
  blocked_at: Type.Union([UserResponse.properties.created_at, Type.Null()]),
  is_blocked: Type.Boolean(),
})
export type AdminUserResponse = Static<typeof AdminUserResponse>

/** Block and role changes: what happened, and the user as it is now. */
export const UserActionResponse = Type.Object({ message: Type.String(), user: AdminUserResponse })
