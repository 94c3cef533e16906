import type { ErrorObject } from 'ajv';
import { dottedPath, pointerTokens } from '../model/field-path.js';
import { nearestName, type KnownName } from './nearest-name.js';

/** Schema keyword holding a field's rule in words, for rules whose pattern would be unreadable in an error. */
export const CUSTOM_MESSAGE = 'x-dkv-message';

/** Schema keyword listing other names a user may know a field by (`replicas` for `size`), for the unknown-field hint. */
export const SYNONYMS = 'x-dkv-synonyms';

/** A field-level problem found by a JSON Schema validator, before a file is attached. */
export interface FieldProblem {
  /** Path segments from the validated document's root. */
  readonly segments: readonly (string | number)[];
  readonly message: string;
}

function pointerSegments(pointer: string): (string | number)[] {
  return pointerTokens(pointer).map((key) => (/^\d+$/.test(key) ? Number(key) : key));
}

/** The fields an object schema knows, with their synonyms, in schema order. */
function knownFields(objectSchema: unknown): KnownName[] {
  const properties = (objectSchema as { properties?: Record<string, Record<string, unknown>> } | undefined)?.properties ?? {};
  return Object.entries(properties).map(([name, schema]) => ({ name, synonyms: Array.isArray(schema?.[SYNONYMS]) ? (schema[SYNONYMS] as string[]) : [] }));
}

/** `unknown field`, and the known sibling the user most likely meant, where one is close. */
export function unknownFieldMessage(parent: readonly (string | number)[], field: string, known: readonly KnownName[]): string {
  const meant = nearestName(field, known);
  return meant === undefined ? 'unknown field' : `unknown field; did you mean ${dottedPath([...parent, meant])}?`;
}

function describe(value: unknown): string {
  const text = JSON.stringify(value);
  return text === undefined ? String(value) : text.length > 80 ? text.slice(0, 77) + '...' : text;
}

/**
 * Turns ajv's errors into one readable problem per field. ajv reports every
 * failed branch of an `anyOf` (integer-or-quantity fields); those collapse
 * into the single sentence a user needs.
 */
export function fieldProblems(errors: readonly ErrorObject[] | null | undefined, prefix: readonly string[] = []): FieldProblem[] {
  if (!errors) return [];
  const anyOfPaths = new Set(errors.filter((e) => e.keyword === 'anyOf').map((e) => e.instancePath));
  const seen = new Set<string>();
  const problems: FieldProblem[] = [];
  for (const e of errors) {
    if (e.keyword !== 'anyOf' && anyOfPaths.has(e.instancePath)) continue;
    let segments = [...prefix, ...pointerSegments(e.instancePath)];
    let message: string;
    switch (e.keyword) {
      case 'required':
        segments = [...segments, (e.params as { missingProperty: string }).missingProperty];
        message = 'required field is missing';
        break;
      case 'additionalProperties': {
        const field = (e.params as { additionalProperty: string }).additionalProperty;
        message = unknownFieldMessage(segments, field, knownFields(e.parentSchema));
        segments = [...segments, field];
        break;
      }
      case 'anyOf':
      case 'pattern':
      case 'minProperties':
      case 'minimum': {
        // A field whose rule a regex states badly says what it wants in words (x-dkv-message).
        const words = (e.parentSchema as Record<string, unknown> | undefined)?.[CUSTOM_MESSAGE];
        if (typeof words === 'string') message = `${words} (got ${describe(e.data)})`;
        else if (e.keyword === 'pattern') message = `must match ${(e.params as { pattern: string }).pattern} (got ${describe(e.data)})`;
        else message = `${e.message ?? 'is invalid'} (got ${describe(e.data)})`;
        break;
      }
      case 'enum':
        message = `must be one of ${(e.params as { allowedValues: unknown[] }).allowedValues.map(describe).join(', ')} (got ${describe(e.data)})`;
        break;
      case 'propertyNames':
        continue; // reported by the nested error on the offending name
      default:
        message = `${e.message ?? 'is invalid'} (got ${describe(e.data)})`;
    }
    // One message per field: a value that is both too short and off-pattern needs one fix, not two reports.
    const key = dottedPath(segments);
    if (seen.has(key)) continue;
    seen.add(key);
    problems.push({ segments, message });
  }
  return problems;
}
