// How a request target is read where no route answered it: for the authentication decision and
// for the path an error message names.

/** Longest path an error message repeats; a longer one is cut (a client chose its length). */
export const SHOWN_PATH_MAX = 256

/** The path of a target in origin or absolute form, without its query or fragment. */
function rawPath(url: string): string {
  let path = url
  // Absolute form (`http://host/v1/pets`): the router matches on the path alone.
  if (path.charCodeAt(0) !== 47 /* / */) {
    const m = /^[A-Za-z][A-Za-z0-9+.-]*:\/\/[^/?#]*/.exec(path)
    path = m === null ? path : path.slice(m[0].length) || '/'
  }
  const end = path.search(/[?#]/)
  return end === -1 ? path : path.slice(0, end)
}

function decoded(text: string): string {
  try {
    return decodeURIComponent(text)
  } catch {
    return text
  }
}

/**
 * Whether a target no route matched lies under the API prefix `/v1`, read more loosely than any
 * router would: percent-decoded (twice), case folded, `;params`, empty and dot segments dropped.
 * A target that could reach an API route in any such spelling is answered as an API request.
 */
export function isApiTarget(url: string): boolean {
  const segments: string[] = []
  for (const raw of decoded(decoded(rawPath(url))).split(/[/\\]/)) {
    const segment = raw.split(';', 1)[0]!.trim().toLowerCase()
    if (segment === '' || segment === '.') continue
    if (segment === '..') segments.pop()
    else segments.push(segment)
  }
  return segments[0] === 'v1'
}

/** The decoded path of a target, as an error message may repeat it: at most SHOWN_PATH_MAX characters. */
export function shownPath(url: string): string {
  const path = decoded(rawPath(url))
  return path.length <= SHOWN_PATH_MAX ? path : `${path.slice(0, SHOWN_PATH_MAX)}…`
}
