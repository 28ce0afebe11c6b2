/** How a value becomes the stored text and back: JSON for remember(), nothing for rememberJson(). */
export interface Codec<T> {
  encode(value: T): string | undefined
  decode(text: string): T
}

export const jsonCodec: Codec<unknown> = {
  encode: (value) => JSON.stringify(value),
  decode: (text) => JSON.parse(text),
}

export const textCodec: Codec<string> = { encode: (value) => value, decode: (text) => text }
