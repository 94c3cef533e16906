import {
  constructFromEvents, defineMappingTag, defineScalarTag, EVENT_ALIAS, EVENT_DOCUMENT, EVENT_MAPPING, EVENT_SCALAR, EVENT_SEQUENCE,
  NOT_RESOLVED, parseEvents, Schema, seqTag, strTag,
} from 'js-yaml';

/**
 * The values of a YAML text read the quick way (js-yaml, about five times
 * faster than `yaml` here and with no line bookkeeping), or undefined when
 * the text uses anything on which the two parsers could disagree about a
 * value: the caller then reads it with `yaml`, which keeps line numbers for
 * every problem it reports. Both parsers pass the whole YAML test suite, so
 * they agree on what is valid syntax; what is left to them is the schema
 * and the limits, so this path takes only YAML that leaves them no choice:
 *
 * - no tags, anchors, aliases or directives (a `%YAML 1.1` would switch
 *   `yaml` to another schema; aliases are what `yaml`'s alias limit counts);
 * - plain scalars resolved by `yaml`'s own YAML 1.2 core schema rules,
 *   copied below test for test, in its order (js-yaml's core schema reads a
 *   few forms differently, e.g. a 400-digit integer);
 * - mapping keys that are strings, never `__proto__` or `<<`, and unique
 *   (js-yaml refuses a duplicate; `yaml` reports it with its line);
 * - no carriage return but in a CRLF line break.
 *
 * Anything else (a syntax error included) returns undefined; it is never an
 * error of its own.
 */
export function plainYamlDocuments(text: string): unknown[] | undefined {
  if (LONE_CARRIAGE_RETURN.test(text)) return undefined; // a line break to js-yaml, an error to yaml
  try {
    const events = parseEvents(text, {});
    for (const event of events) {
      switch (event.type) {
        case EVENT_ALIAS:
          return undefined;
        case EVENT_DOCUMENT:
          if (event.directives.length > 0) return undefined;
          break;
        case EVENT_SCALAR:
        case EVENT_SEQUENCE:
        case EVENT_MAPPING:
          if (event.tagStart !== -1 || event.anchorStart !== -1) return undefined;
          break;
      }
    }
    return constructFromEvents(events, { source: text, schema: YAML_CORE_AS_YAML_READS_IT, maxAliases: 0 });
  } catch {
    return undefined;
  }
}

const LONE_CARRIAGE_RETURN = /\r(?!\n)/;

/** One of `yaml`'s core schema resolvers (node_modules/yaml/dist/schema/core): its test and what it makes of a match. */
function coreScalar<T>(tag: string, firstChars: readonly string[] | null, rules: readonly (readonly [RegExp, (source: string) => T])[]) {
  return defineScalarTag<T>(tag, {
    implicit: true,
    implicitFirstChars: firstChars,
    resolve: (source) => {
      for (const [test, value] of rules) if (test.test(source)) return value(source);
      return NOT_RESOLVED;
    },
    identify: () => false, // load only
  });
}

const DIGITS = [...'0123456789'];

/** A plain object with string keys, as `yaml`'s toJS() builds one, refusing what only `yaml` should judge. */
const stringKeyedMap = defineMappingTag<Record<string, unknown>>('tag:yaml.org,2002:map', {
  create: () => ({}),
  addPair: (map, key, value) => {
    if (typeof key !== 'string') return 'a key that is not a string';
    if (key === '__proto__' || key === '<<') return `the key ${key}`;
    map[key] = value;
    return '';
  },
  has: (map, key) => typeof key === 'string' && Object.hasOwn(map, key),
  keys: (map) => Object.keys(map),
  get: (map, key) => map[key as string],
  identify: () => false,
});

/** `yaml`'s YAML 1.2 core schema, in its order: null, bool, int (octal, decimal, hex), float (nan/inf, exponent, plain). */
const YAML_CORE_AS_YAML_READS_IT = new Schema([
  strTag,
  seqTag,
  stringKeyedMap,
  coreScalar('tag:yaml.org,2002:null', ['', '~', 'n', 'N'], [[/^(?:~|[Nn]ull|NULL)?$/, () => null]]),
  coreScalar('tag:yaml.org,2002:bool', ['t', 'T', 'f', 'F'], [[/^(?:[Tt]rue|TRUE|[Ff]alse|FALSE)$/, (s) => s[0] === 't' || s[0] === 'T']]),
  coreScalar('tag:yaml.org,2002:int', ['-', '+', ...DIGITS], [
    [/^0o[0-7]+$/, (s) => parseInt(s.substring(2), 8)],
    [/^[-+]?[0-9]+$/, (s) => parseInt(s, 10)],
    [/^0x[0-9a-fA-F]+$/, (s) => parseInt(s.substring(2), 16)],
  ]),
  coreScalar('tag:yaml.org,2002:float', ['-', '+', '.', ...DIGITS], [
    [/^(?:[-+]?\.(?:inf|Inf|INF)|\.nan|\.NaN|\.NAN)$/, (s) => (s.slice(-3).toLowerCase() === 'nan' ? NaN : s[0] === '-' ? -Infinity : Infinity)],
    [/^[-+]?(?:\.[0-9]+|[0-9]+(?:\.[0-9]*)?)[eE][-+]?[0-9]+$/, (s) => parseFloat(s)],
    [/^[-+]?(?:\.[0-9]+|[0-9]+\.[0-9]*)$/, (s) => parseFloat(s)],
  ]),
]);
