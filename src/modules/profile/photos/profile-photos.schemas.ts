import type { Readable } from 'node:stream'
import { Type } from 'typebox'
import { IMAGE_CONTENT_TYPES } from '../../../lib/images.ts'
import { PHOTO_FILE_NAME } from './profile-photos.service.ts'

/** The upload, for the OpenAPI document; the handler reads the multipart stream itself. */
export const PhotoUploadBody = {
  content: {
    'multipart/form-data': {
      schema: Type.Object({
        photo: Type.String({
          contentMediaType: 'application/octet-stream',
          description: 'A PNG, JPEG, GIF or WebP image of at most 2 MiB (judged by its bytes, not its name).',
        }),
      }),
    },
  },
}

export const PhotoFileParams = Type.Object({ file: Type.String({ pattern: PHOTO_FILE_NAME }) })

/** The image itself, with the content type of its format. */
export const PhotoFileResponse = Type.Unsafe<Readable>({
  type: 'string',
  contentMediaType: 'image/*',
  description: `One of ${Object.values(IMAGE_CONTENT_TYPES).join(', ')}.`,
})
