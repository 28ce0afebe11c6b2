import { HttpError, ValidationError } from '../../lib/errors.ts'

// Laravel's route-model binding answers an unknown (or, here, invisible) model with this text.
const modelNotFound = (model: string, id: number) =>
  new HttpError(404, `No query results for model [App\\Models\\${model}] ${id}`)

/** A group that does not exist, or a private one the caller does not belong to. */
export const groupNotFound = (id: number) => modelNotFound('Group', id)
export const messageNotFound = (id: number) => modelNotFound('Message', id)
export const attachmentNotFound = (id: number) => modelNotFound('MessageAttachment', id)
export const inviteNotFound = (id: number) => modelNotFound('Invite', id)
export const joinRequestNotFound = (id: number) => modelNotFound('JoinRequest', id)
export const userNotFound = (id: number) => modelNotFound('User', id)

export const fieldError = (field: string, message: string) =>
  ValidationError.withMessages({ [field]: [message] })
