/** The image formats the service accepts, by the file extension it stores them under. */
export const IMAGE_CONTENT_TYPES = {
  png: 'image/png',
  jpg: 'image/jpeg',
  gif: 'image/gif',
  webp: 'image/webp',
} as const

export type ImageExtension = keyof typeof IMAGE_CONTENT_TYPES

const startsWithAt = (bytes: Uint8Array, offset: number, text: string) =>
  Buffer.from(bytes.subarray(offset, offset + text.length)).toString('latin1') === text

/**
 * The format of `bytes` by its signature (PNG, JPEG, GIF, WebP), or null for anything else: what
 * the client claims (file name, content type) is never trusted.
 */
export function sniffImageType(bytes: Uint8Array): ImageExtension | null {
  // PNG: the 8-byte signature, then the IHDR chunk every PNG starts with.
  if (startsWithAt(bytes, 0, '\x89PNG\r\n\x1a\n') && startsWithAt(bytes, 12, 'IHDR')) return 'png'
  // JPEG: start-of-image followed by a marker.
  if (bytes[0] === 0xff && bytes[1] === 0xd8 && bytes[2] === 0xff) return 'jpg'
  if (startsWithAt(bytes, 0, 'GIF87a') || startsWithAt(bytes, 0, 'GIF89a')) return 'gif'
  // WebP: a RIFF container of type WEBP whose first chunk is VP8, VP8L or VP8X.
  if (startsWithAt(bytes, 0, 'RIFF') && startsWithAt(bytes, 8, 'WEBPVP8')) return 'webp'
  return null
}
