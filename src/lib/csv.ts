/** One record of a CSV file and the line it starts on (1-based, as an editor numbers lines). */
export interface CsvRecord {
  line: number
  fields: string[]
  /** Set when a quoted field is never closed: it ran to the end of the file. */
  unclosedQuote?: true
}

/**
 * Reads CSV as spreadsheets and database tools write it (RFC 4180, leniently): a leading byte order
 * mark is dropped; records end at CRLF, LF or CR; a field in double quotes may hold commas, quotes
 * (doubled) and line breaks. Blank lines are skipped. A quote inside an unquoted field is kept as
 * it is, as spreadsheets read it.
 */
export function parseCsv(text: string): CsvRecord[] {
  const input = text.charCodeAt(0) === 0xfeff ? text.slice(1) : text
  const records: CsvRecord[] = []
  let line = 1
  let i = 0
  while (i < input.length) {
    const start = line
    const fields: string[] = []
    let field = ''
    let quoted = false
    let unclosed = false
    for (;;) {
      if (i >= input.length) {
        fields.push(field)
        unclosed = quoted
        break
      }
      const c = input[i] as string
      if (quoted) {
        if (c === '"' && input[i + 1] === '"') {
          field += '"'
          i += 2
        } else if (c === '"') {
          quoted = false
          i++
        } else {
          if (c === '\n' || (c === '\r' && input[i + 1] !== '\n')) line++
          field += c
          i++
        }
      } else if (c === '"' && field === '') {
        quoted = true
        i++
      } else if (c === ',') {
        fields.push(field)
        field = ''
        i++
      } else if (c === '\r' || c === '\n') {
        fields.push(field)
        i += c === '\r' && input[i + 1] === '\n' ? 2 : 1
        line++
        break
      } else {
        field += c
        i++
      }
    }
    const blank = fields.length === 1 && fields[0] === '' && !unclosed
    if (!blank)
      records.push(unclosed ? { line: start, fields, unclosedQuote: true } : { line: start, fields })
  }
  return records
}
