import type { TObject } from 'typebox'
import type { UserRow } from '../../../db/schema/index.ts'

/** Who a tool runs for: the signed-in user (null for a guest) and the request, for the upstream's logs. */
export interface ToolContext {
  user: UserRow | null
  requestId: string
}

/**
 * A tool as this service defines it: a name the model calls it by, what it is for, its input, and
 * what it does through the app's own services (so caching and ownership rules hold as for the API).
 * `run` answers plain JSON; bounding, validation, errors and recording are the tool set's job.
 */
export interface ToolDefinition<Input = Record<string, unknown>> {
  name: string
  description: string
  input: TObject
  run(input: Input, context: ToolContext): Promise<unknown>
}

/** A tool for signed-in users only: the catalog never offers it to a guest; this guards it anyway. */
export function accountOf(context: ToolContext): UserRow {
  if (!context.user) throw new ToolRefusal('Sign in to use this tool.')
  return context.user
}

/**
 * A refusal the model may read and repeat (not signed in, not found, the budget spent): not a
 * failure of the tool. `details` go to the model beside the message (`retry_after`).
 */
export class ToolRefusal extends Error {
  readonly details: Record<string, unknown>
  constructor(message: string, details: Record<string, unknown> = {}) {
    super(message)
    this.details = details
  }
}

export const define = <Input>(definition: ToolDefinition<Input>) => definition as unknown as ToolDefinition
