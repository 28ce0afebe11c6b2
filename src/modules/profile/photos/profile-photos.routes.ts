import multipart from '@fastify/multipart'
import type { TypeBoxTypeProvider } from '@fastify/type-provider-typebox'
import type { FastifyInstance, FastifyRequest } from 'fastify'
import { notFound } from '../../../lib/errors.ts'
import { commonErrorResponses, MessageResponse } from '../../../lib/http-schemas.ts'
import { IMAGE_CONTENT_TYPES } from '../../../lib/images.ts'
import { type FormShape, readMultipartForm } from '../../../lib/multipart.ts'
import { signedInUser } from '../../../plugins/guards.ts'
import { UserResponse } from '../../users/users.schemas.ts'
import { PhotoFileParams, PhotoFileResponse, PhotoUploadBody } from './profile-photos.schemas.ts'
import { MAX_PHOTO_BYTES, type PhotoUpload } from './profile-photos.service.ts'

// Busboy cuts the photo off at the limit (and flags it), so an oversized upload is never held whole.
const multipartLimits = { fileSize: MAX_PHOTO_BYTES, files: 3, fields: 10, fieldSize: 1024, parts: 13 }

// Jetstream's form has the photo alone: other text fields are read (and cleaned) and dropped.
const photoForm: FormShape = { isFile: (name) => name === 'photo', text: [] }

/** The first `photo` file of a multipart request (other files are read and dropped), or null when there is none. */
async function readPhoto(request: FastifyRequest): Promise<PhotoUpload | null> {
  if (!request.isMultipart()) return null
  let upload: PhotoUpload | null = null
  await readMultipartForm(request, photoForm, async (part) => {
    const bytes = await part.toBuffer()
    upload ??= { bytes, truncated: part.file.truncated }
  })
  return upload
}

/** Jetstream's profile photo: upload and removal, and the public URL the stored file is served at. */
export default async function profilePhotosRoutes(fastify: FastifyInstance) {
  const app = fastify.withTypeProvider<TypeBoxTypeProvider>()
  // Only here: no other route accepts multipart bodies.
  await app.register(multipart, { limits: multipartLimits, throwFileSizeLimit: false })
  const { photos, userView } = app.services
  const tags = ['profile']
  const userResponse = { 200: UserResponse, ...commonErrorResponses }

  app.post(
    '/api/user-profile/profile-photo',
    {
      config: { auth: 'session' },
      schema: { tags, consumes: ['multipart/form-data'], body: PhotoUploadBody, response: userResponse },
      // The schema documents the form; readPhoto and the service check the stream itself.
      validatorCompiler: () => () => true,
    },
    async (request) => {
      const user = await photos.replace(signedInUser(request), await readPhoto(request))
      return userView.present(user)
    },
  )

  app.delete(
    '/api/user-profile/profile-photo',
    { config: { auth: 'session' }, schema: { tags, response: userResponse } },
    async (request) => {
      const user = await photos.remove(signedInUser(request))
      return userView.present(user)
    },
  )

  // Public, as Laravel's public disk is: the random file name is what keeps a photo unlisted.
  app.get(
    '/storage/profile-photos/:file',
    {
      schema: {
        tags,
        params: PhotoFileParams,
        produces: Object.values(IMAGE_CONTENT_TYPES),
        response: { 200: PhotoFileResponse, '4xx': MessageResponse },
      },
    },
    async (request, reply) => {
      const photo = await photos.open(request.params.file)
      if (!photo) throw notFound()
      return reply
        .header('content-type', photo.contentType)
        .header('content-length', photo.size)
        .header('cache-control', 'public, max-age=31536000, immutable')
        .send(photo.stream)
    },
  )
}
