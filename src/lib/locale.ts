// ISO 3166-1 alpha-2: the 249 officially assigned codes (no reserved, deprecated or user-assigned
// ones such as EU, UK or XK), so what is stored is a country every library and payment provider knows.
const COUNTRY_CODES = new Set(
  (
    'AD AE AF AG AI AL AM AO AQ AR AS AT AU AW AX AZ BA BB BD BE BF BG BH BI BJ BL BM BN BO BQ BR BS ' +
    'BT BV BW BY BZ CA CC CD CF CG CH CI CK CL CM CN CO CR CU CV CW CX CY CZ DE DJ DK DM DO DZ EC EE ' +
    'EG EH ER ES ET FI FJ FK FM FO FR GA GB GD GE GF GG GH GI GL GM GN GP GQ GR GS GT GU GW GY HK HM ' +
    'HN HR HT HU ID IE IL IM IN IO IQ IR IS IT JE JM JO JP KE KG KH KI KM KN KP KR KW KY KZ LA LB LC ' +
    'LI LK LR LS LT LU LV LY MA MC MD ME MF MG MH MK ML MM MN MO MP MQ MR MS MT MU MV MW MX MY MZ NA ' +
    'NC NE NF NG NI NL NO NP NR NU NZ OM PA PE PF PG PH PK PL PM PN PR PS PT PW PY QA RE RO RS RU RW ' +
    'SA SB SC SD SE SG SH SI SJ SK SL SM SN SO SR SS ST SV SX SY SZ TC TD TF TG TH TJ TK TL TM TN TO ' +
    'TR TT TV TW TZ UA UG UM US UY UZ VA VC VE VG VI VN VU WF WS YE YT ZA ZM ZW'
  ).split(' '),
)

/** An officially assigned ISO 3166-1 alpha-2 country code, in capitals ("FR", "US"). */
export const isCountryCode = (value: string) => COUNTRY_CODES.has(value)

const ZONES = new Set([...Intl.supportedValuesOf('timeZone'), 'UTC'])
// Nothing but IANA-style names: ICU would also take offsets such as "+05:00".
const ZONE_NAME = /^[A-Za-z][A-Za-z0-9_+-]*(?:\/[A-Za-z0-9_+-]+){0,2}$/

/**
 * An IANA time zone name the runtime knows: one it lists, or an alias of one ("Asia/Kolkata" and
 * "Europe/Kyiv", which ICU lists under their older names "Asia/Calcutta" and "Europe/Kiev").
 */
export function isTimeZone(value: string): boolean {
  if (ZONES.has(value)) return true
  if (value.length > 64 || !ZONE_NAME.test(value)) return false
  try {
    const resolved = new Intl.DateTimeFormat('en', { timeZone: value }).resolvedOptions().timeZone
    // ICU ignores case; a listed name is only taken as written ("europe/paris" is not a name).
    return ZONES.has(resolved) && resolved.toLowerCase() !== value.toLowerCase()
  } catch {
    return false
  }
}
