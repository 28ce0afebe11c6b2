import { Type } from 'typebox'
import { UpstreamId } from '../proxy.schemas.ts'

export const AccountParams = Type.Object({ accountId: UpstreamId })
