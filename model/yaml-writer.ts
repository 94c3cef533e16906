/**
 * A YAML writer for JSON-shaped data (maps, lists, strings, numbers, booleans,
 * null), about ten times faster than the general-purpose `yaml` stringifier,
 * which was most of `dkv synth`'s time. Keys are sorted; strings are written
 * plain only where YAML 1.1 and 1.2 parsers both read them back as the same
 * string, double-quoted (JSON escapes) everywhere else, except a multi-line
 * map value (a file in a ConfigMap, as `dkv install` writes one), which stays
 * readable as a literal block (`|`) where both parsers read that back
 * unchanged. A test reads every output back with the `yaml` parser and compares.
 */

const PLAIN = /^[A-Za-z_/][A-Za-z0-9_./@-]*(?::[A-Za-z0-9_./@-]+)*$/;
/** Words YAML 1.1 reads as booleans or null. */
const RESERVED = /^(?:y|n|yes|no|on|off|true|false|null|~)$/i;

function scalar(value: unknown): string {
  if (value === null || value === undefined) return 'null';
  if (typeof value === 'number' || typeof value === 'boolean') return String(value);
  const text = String(value);
  return PLAIN.test(text) && !RESERVED.test(text) ? text : JSON.stringify(text);
}

/** Characters other than the newline that a literal block cannot hold as they are: controls, tabs, and what YAML 1.1 also reads as a line break (NEL, LS, PS). */
// eslint-disable-next-line no-control-regex -- finding control characters is the point
const NOT_LITERAL = /[\x00-\x09\x0b-\x1f\x7f-\x9f\u2028\u2029\ufeff]/;

/**
 * Multi-line text a literal block keeps byte for byte: no line starts the
 * block with a space or a newline (the first line sets the indentation), and
 * no line ends with a space (a line of spaces alone would read as empty).
 */
function isLiteral(text: string): boolean {
  if (!text.includes('\n') || text.startsWith(' ') || text.startsWith('\n') || NOT_LITERAL.test(text)) return false;
  return text.replace(/\n+$/, '').split('\n').every((line) => !line.endsWith(' '));
}

/** A literal block for a map value at `indent`: `|-` keeps no final newline, `|` one, `|+` more. */
function literalBlock(text: string, indent: string): string {
  const body = text.replace(/\n+$/, '');
  const trailing = text.length - body.length;
  const chomping = trailing === 0 ? '-' : trailing === 1 ? '' : '+';
  const lines = body.split('\n').map((line) => (line === '' ? '\n' : `${indent}  ${line}\n`));
  return `|${chomping}\n${lines.join('')}${'\n'.repeat(Math.max(0, trailing - 1))}`;
}

function isEmpty(value: unknown): boolean {
  if (Array.isArray(value)) return value.length === 0;
  for (const _key in value as object) return false; // JSON-shaped: no inherited keys
  return true;
}

/**
 * Keys as written, remembered: a run writes the same few hundred keys (the
 * fields of Kubernetes objects) a thousand times each, and testing each
 * against the patterns was a good part of the writer's time. Only keys are
 * remembered, and at most KEYS_REMEMBERED of them (a long-running process
 * writing ever new keys, a ConfigMap's file names say, keeps no more).
 */
const writtenKeys = new Map<string, string>();
const KEYS_REMEMBERED = 4096;

function key(name: string): string {
  let written = writtenKeys.get(name);
  if (written === undefined) {
    written = scalar(name);
    if (writtenKeys.size < KEYS_REMEMBERED) writtenKeys.set(name, written);
  }
  return written;
}

function isCollection(value: unknown): value is object {
  return value !== null && typeof value === 'object';
}

function writeMap(map: Record<string, unknown>, indent: string, out: string[], firstPrefix?: string): void {
  let first = true;
  for (const name of Object.keys(map).sort()) {
    const value = map[name];
    if (value === undefined) continue;
    const prefix = first && firstPrefix !== undefined ? firstPrefix : indent;
    first = false;
    if (isCollection(value) && !isEmpty(value)) {
      out.push(`${prefix}${key(name)}:\n`);
      writeNode(value, indent + '  ', out);
    } else if (typeof value === 'string' && isLiteral(value)) {
      out.push(`${prefix}${key(name)}: ${literalBlock(value, indent)}`);
    } else {
      out.push(`${prefix}${key(name)}: ${isCollection(value) ? (Array.isArray(value) ? '[]' : '{}') : scalar(value)}\n`);
    }
  }
}

function writeNode(value: object, indent: string, out: string[]): void {
  if (!Array.isArray(value)) {
    writeMap(value as Record<string, unknown>, indent, out);
    return;
  }
  for (const item of value) {
    if (isCollection(item) && !isEmpty(item)) {
      if (Array.isArray(item)) {
        out.push(`${indent}-\n`);
        writeNode(item, indent + '  ', out);
      } else {
        writeMap(item as Record<string, unknown>, indent + '  ', out, `${indent}- `);
      }
    } else {
      out.push(`${indent}- ${isCollection(item) ? (Array.isArray(item) ? '[]' : '{}') : scalar(item)}\n`);
    }
  }
}

/** One YAML document for a JSON-shaped map. */
export function yamlDocument(value: Record<string, unknown>): string {
  const out: string[] = [];
  writeMap(value, '', out);
  return out.join('');
}
