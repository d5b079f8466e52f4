// The document's YAML form. BigInts (the int64 bounds) are written with every digit. Strings are
// double-quoted, and keys quoted where a YAML 1.1 reader would take them for anything but a string.
import { stringify } from 'yaml'

export const toYaml = (value: unknown): string =>
  stringify(value, {
    version: '1.1',
    defaultKeyType: 'PLAIN',
    defaultStringType: 'QUOTE_DOUBLE',
    aliasDuplicateObjects: false, // a schema met twice is written twice: no anchors
    lineWidth: 0, // no folded lines
  })
