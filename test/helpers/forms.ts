import { randomBytes } from 'node:crypto'

/** A raw body and its content type, for TestClient's `raw` option. */
export interface RawBody {
  payload: string
  contentType: string
}

/** Fields as pairs, so a name may repeat (`tags=a&tags=b`) or be anything at all (`__proto__`). */
export type FormPairs = readonly (readonly [string, string])[]

/** An `application/x-www-form-urlencoded` body, as an HTML form posts it. */
export function formEncoded(pairs: FormPairs): RawBody {
  return {
    payload: pairs
      .map(([name, value]) => `${encodeURIComponent(name)}=${encodeURIComponent(value)}`)
      .join('&'),
    contentType: 'application/x-www-form-urlencoded',
  }
}

/** A `multipart/form-data` body of text fields, as the browser's FormData sends it. */
export function multipartForm(pairs: FormPairs): RawBody {
  const boundary = `----walker${randomBytes(8).toString('hex')}`
  // The HTML spec's escaping of a field name inside its quotes.
  const quoted = (name: string) => name.replaceAll('"', '%22').replaceAll('\r', '%0D').replaceAll('\n', '%0A')
  const parts = pairs.map(
    ([name, value]) =>
      `--${boundary}\r\nContent-Disposition: form-data; name="${quoted(name)}"\r\n\r\n${value}\r\n`,
  )
  return {
    payload: `${parts.join('')}--${boundary}--\r\n`,
    contentType: `multipart/form-data; boundary=${boundary}`,
  }
}
