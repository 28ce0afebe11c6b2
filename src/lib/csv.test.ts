import { describe, expect, it } from 'vitest'
import { parseCsv } from './csv.ts'

describe('parseCsv', () => {
  it('reads quoted fields with commas, doubled quotes and line breaks, numbering records by their first line', () => {
    const text = '\ufeffa,b\r\n"x, y","say ""hi"""\r\n"two\r\nlines",z\r\n\r\nlast,\r\n'
    expect(parseCsv(text)).toEqual([
      { line: 1, fields: ['a', 'b'] },
      { line: 2, fields: ['x, y', 'say "hi"'] },
      { line: 3, fields: ['two\r\nlines', 'z'] },
      { line: 6, fields: ['last', ''] },
    ])
  })

  it('takes LF, CR and a missing last line end alike', () => {
    expect(parseCsv('a,b\nc,d\re,f')).toEqual([
      { line: 1, fields: ['a', 'b'] },
      { line: 2, fields: ['c', 'd'] },
      { line: 3, fields: ['e', 'f'] },
    ])
  })

  it('marks a quoted field never closed, which runs to the end of the file', () => {
    expect(parseCsv('a,b\n"open,1\nc,d\n')).toEqual([
      { line: 1, fields: ['a', 'b'] },
      { line: 2, fields: ['open,1\nc,d\n'], unclosedQuote: true },
    ])
  })
})
