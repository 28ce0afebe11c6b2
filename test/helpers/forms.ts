import { randomBytes } from 'node:crypto'

/** A raw body and its content type, for TestClient's `raw` option. */
export interface RawBody {
  payload: string | Buffer
  contentType: string
}

/** A real 1x1 PNG: a file every upload of this API accepts. */
export const TINY_PNG = Buffer.from(
  'iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAQAAAC1HAwCAAAAC0lEQVR42mNkYAAAAAYAAjCB0C8AAAAASUVORK5CYII=',
  'base64',
)

/**
 * Fields as pairs, so a name may repeat (`tags=a&tags=b`) or be anything at all (`__proto__`); a
 * third item, a file name, makes the value a file's content in a multipart body.
 */
export type FormPair = readonly [name: string, value: string | Buffer, filename?: string]
export type FormPairs = readonly FormPair[]

/** An `application/x-www-form-urlencoded` body, as an HTML form posts it. */
export function formEncoded(pairs: FormPairs): RawBody {
  return {
    payload: pairs
      .map(([name, value]) => `${encodeURIComponent(name)}=${encodeURIComponent(value.toString())}`)
      .join('&'),
    contentType: 'application/x-www-form-urlencoded',
  }
}

/** A `multipart/form-data` body of text fields and files, as the browser's FormData sends it. */
export function multipartForm(pairs: FormPairs): RawBody {
  const boundary = `----walker${randomBytes(8).toString('hex')}`
  // The HTML spec's escaping of a field name inside its quotes.
  const quoted = (name: string) => name.replaceAll('"', '%22').replaceAll('\r', '%0D').replaceAll('\n', '%0A')
  const parts = pairs.map(([name, value, filename]) => {
    const file =
      filename === undefined
        ? ''
        : `; filename="${quoted(filename)}"\r\nContent-Type: application/octet-stream`
    const head = `--${boundary}\r\nContent-Disposition: form-data; name="${quoted(name)}"${file}\r\n\r\n`
    return Buffer.concat([Buffer.from(head), Buffer.from(value), Buffer.from('\r\n')])
  })
  return {
    payload: Buffer.concat([...parts, Buffer.from(`--${boundary}--\r\n`)]),
    contentType: `multipart/form-data; boundary=${boundary}`,
  }
}
