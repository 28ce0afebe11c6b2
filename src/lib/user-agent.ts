/** What Jetstream's browser-sessions list shows about a device. */
export interface DeviceAgent {
  platform: string | null
  browser: string | null
  is_desktop: boolean
}

type Rules = [name: string, pattern: string][]

// MobileDetect's operating systems, then Jetstream's additions, in the order Jetstream tries them.
const PLATFORMS: Rules = [
  ['AndroidOS', 'Android'],
  ['BlackBerryOS', 'blackberry|\\bBB10\\b|rim tablet os'],
  ['PalmOS', 'PalmOS|avantgo|blazer|elaine|hiptop|palm|plucker|xiino'],
  ['SymbianOS', 'Symbian|SymbOS|Series60|Series40|SYB-[0-9]+|\\bS60\\b'],
  [
    'WindowsMobileOS',
    'Windows CE.*(PPC|Smartphone|Mobile|[0-9]{3}x[0-9]{3})|Windows Mobile|Windows Phone [0-9.]+|WCE;',
  ],
  [
    'WindowsPhoneOS',
    'Windows Phone 10.0|Windows Phone 8.1|Windows Phone 8.0|Windows Phone OS|XBLWP7|ZuneWP7|Windows NT 6.[23]; ARM;',
  ],
  ['iOS', '\\biPhone.*Mobile|\\biPod|\\biPad|AppleCoreMedia'],
  ['iPadOS', 'CPU OS 13'],
  ['SailfishOS', 'Sailfish'],
  ['MeeGoOS', 'MeeGo'],
  ['MaemoOS', 'Maemo'],
  ['JavaOS', 'J2ME/|\\bMIDP\\b|\\bCLDC\\b'],
  ['webOS', 'webOS|hpwOS'],
  ['badaOS', '\\bBada\\b'],
  ['BREWOS', 'BREW'],
  ['Windows', 'Windows'],
  ['Windows NT', 'Windows NT'],
  ['OS X', 'Mac OS X'],
  ['Debian', 'Debian'],
  ['Ubuntu', 'Ubuntu'],
  ['Macintosh', 'PPC'],
  ['OpenBSD', 'OpenBSD'],
  ['Linux', 'Linux'],
  ['ChromeOS', 'CrOS'],
]

// Jetstream's browsers first, MobileDetect's after; a name in both lists gets both patterns at its
// first place (Jetstream's mergeRules), which is why Chrome on iOS (CriOS) is still "Chrome".
const BROWSERS: Rules = [
  ['Opera Mini', 'Opera Mini'],
  ['Opera', 'Opera|OPR|Opera.*Mini|Opera.*Mobi|Android.*Opera|Mobile.*OPR/[0-9.]+$|Coast/[0-9.]+'],
  ['Edge', 'Edge|Edg|EdgiOS|Mobile Safari/[.0-9]* Edge'],
  ['Coc Coc', 'coc_coc_browser'],
  ['UCBrowser', 'UCBrowser|UC.*Browser|UCWEB'],
  ['Vivaldi', 'Vivaldi'],
  ['Chrome', 'Chrome|\\bCrMo\\b|CriOS|Android.*Chrome/[.0-9]* (Mobile)?'],
  ['Firefox', 'Firefox|fennec|firefox.*maemo|(Mobile|Tablet).*Firefox|Firefox.*Mobile|FxiOS'],
  ['Safari', 'Safari|Version.*Mobile.*Safari|Safari.*Mobile|MobileSafari'],
  ['IE', 'MSIE|IEMobile|MSIEMobile|Trident/[.0-9]+'],
  ['Netscape', 'Netscape'],
  ['Mozilla', 'Mozilla'],
  ['WeChat', 'MicroMessenger|\\bMicroMessenger\\b'],
  ['Dolfin', '\\bDolfin\\b'],
  ['Skyfire', 'Skyfire'],
  ['Bolt', 'bolt'],
  ['TeaShark', 'teashark'],
  ['Blazer', 'Blazer'],
  ['baiduboxapp', 'baiduboxapp'],
  ['baidubrowser', 'baidubrowser'],
  ['DiigoBrowser', 'DiigoBrowser'],
  ['Mercury', '\\bMercury\\b'],
  ['ObigoBrowser', 'Obigo'],
  ['NetFront', 'NF-Browser'],
  [
    'GenericBrowser',
    'NokiaBrowser|OviBrowser|OneBrowser|TwonkyBeamBrowser|SEMC.*Browser|FlyFlow|Minimo|NetFront|Novarra-Vision|MQQBrowser|MicroMessenger',
  ],
  ['PaleMoon', 'PaleMoon'],
]

// MobileDetect's isMobile()/isTablet() reduced to what tells a phone or tablet from a desktop: its
// mobile OS and mobile browser rules plus the device words phones and tablets send.
const HANDHELD = new RegExp(
  [
    ...PLATFORMS.slice(
      0,
      PLATFORMS.findIndex(([name]) => name === 'Windows'),
    ).map(([, pattern]) => pattern),
    '\\biPhone\\b|\\biPod\\b|\\biPad\\b|\\bMobi|Tablet|Kindle|\\bSilk\\b|PlayBook|Opera Mini|IEMobile',
    'CriOS|FxiOS|EdgiOS|fennec|MicroMessenger|UCWEB|NokiaBrowser|\\bnokia|Smartphone|\\bwap\\b',
  ].join('|'),
  'is',
)

const compiled = (rules: Rules) => rules.map(([name, pattern]) => [name, new RegExp(pattern, 'is')] as const)
const platformRules = compiled(PLATFORMS)
const browserRules = compiled(BROWSERS)

function firstMatch(rules: ReturnType<typeof compiled>, userAgent: string): string | null {
  for (const [name, pattern] of rules) if (pattern.test(userAgent)) return name
  return null
}

/** Jetstream's Agent: platform and browser by the first matching rule (null when none), and is_desktop. */
export function parseUserAgent(userAgent: string | null | undefined): DeviceAgent {
  const ua = userAgent ?? ''
  return {
    platform: firstMatch(platformRules, ua),
    browser: firstMatch(browserRules, ua),
    is_desktop: !HANDHELD.test(ua),
  }
}
