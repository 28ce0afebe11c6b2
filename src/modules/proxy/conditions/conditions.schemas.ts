import { Type } from 'typebox'
import { UpstreamId } from '../proxy.schemas.ts'

export const ConditionParams = Type.Object({ id: UpstreamId })
