/**
 * Converts a DistributedKV between served versions, losslessly in both
 * directions. Versions differ only by the fields the schema marks
 * `x-dkv-since` (api/versions.ts): going down to a version that cannot hold
 * such a field, its value moves into the PRESERVED_FIELDS_ANNOTATION; going
 * up, it moves back. So a v1alpha1 client that reads, edits and writes back
 * an object (kubectl edit, a GitOps tool's update) keeps what only v1beta1
 * can express, and v1alpha1 → v1beta1 → v1alpha1 is byte-for-byte the
 * object it was. The same function serves the conversion webhook, `dkv
 * synth` (which reads files of either version) and the tests.
 */
import { SCHEMA } from './schema.js';
import { API_GROUP, missingFrom, servedVersionOf, versionedFields, type ServedVersion, type VersionedField } from './versions.js';

/**
 * Values of fields the object's version cannot hold, as JSON keyed by their
 * dotted path (`{"spec.backup.retain":7}`). Part of the API, like
 * `apiVersion`: not configurable, or two controllers would lose each
 * other's fields.
 */
export const PRESERVED_FIELDS_ANNOTATION = `${API_GROUP}/preserved-fields`;

let fields: VersionedField[] | undefined;

/**
 * The schema's versioned fields, found once per process: the schema is read
 * once and never changes, and walking it for every object (validation asks
 * for every spec) cost more than checking the spec against it.
 */
export function schemaVersionedFields(): readonly VersionedField[] {
  fields ??= versionedFields(SCHEMA);
  return fields;
}

type Json = Record<string, any>;

function isObject(value: unknown): value is Json {
  return typeof value === 'object' && value !== null && !Array.isArray(value);
}

function parentOf(object: Json, path: readonly string[]): Json | undefined {
  let node: unknown = object;
  for (const segment of path.slice(0, -1)) {
    node = isObject(node) ? node[segment] : undefined;
  }
  return isObject(node) ? node : undefined;
}

function readPreserved(object: Json): Record<string, unknown> {
  const text = object.metadata?.annotations?.[PRESERVED_FIELDS_ANNOTATION];
  if (typeof text !== 'string') return {};
  try {
    const parsed: unknown = JSON.parse(text);
    return isObject(parsed) ? parsed : {};
  } catch {
    return {}; // hand-edited into something else: nothing to restore from it
  }
}

function writePreserved(object: Json, preserved: Record<string, unknown>): void {
  const keys = Object.keys(preserved).sort();
  const annotations: Json = { ...(object.metadata?.annotations ?? {}) };
  if (keys.length > 0) {
    annotations[PRESERVED_FIELDS_ANNOTATION] = JSON.stringify(Object.fromEntries(keys.map((k) => [k, preserved[k]])));
  } else {
    delete annotations[PRESERVED_FIELDS_ANNOTATION];
  }
  object.metadata = { ...(object.metadata ?? {}) };
  // The API server omits an empty map: so does conversion, or a round trip would add one.
  if (Object.keys(annotations).length > 0) object.metadata.annotations = annotations;
  else delete object.metadata.annotations;
}

/**
 * The object in `toVersion` (a deep copy; the input is left alone). Throws
 * for an apiVersion this API does not serve.
 */
export function convertDistributedKV<T extends Json>(object: T, toVersion: ServedVersion): T {
  return convertOwnCopy(structuredClone(object), toVersion);
}

/**
 * convertDistributedKV for a caller that already holds its own copy (validation
 * defaults and converts the copy it made): the object is converted in place
 * and returned, saving a second deep copy of every spec.
 */
export function convertOwnCopy<T extends Json>(object: T, toVersion: ServedVersion): T {
  const fromVersion = servedVersionOf(object.apiVersion);
  if (fromVersion === undefined) throw new Error(`cannot convert apiVersion ${JSON.stringify(object.apiVersion)}: not a served version of ${API_GROUP}`);
  const out = object as Json;
  out.apiVersion = `${API_GROUP}/${toVersion}`;
  if (fromVersion === toVersion) return out as T;
  const preserved = readPreserved(out);
  let touched = false;
  for (const field of schemaVersionedFields()) {
    const key = field.path.join('.');
    const name = field.path[field.path.length - 1];
    const parent = parentOf(out, field.path);
    if (missingFrom(field, toVersion)) {
      // Down: the value waits in the annotation.
      if (parent && Object.hasOwn(parent, name)) {
        preserved[key] = parent[name];
        delete parent[name];
        touched = true;
      }
    } else if (missingFrom(field, fromVersion) && Object.hasOwn(preserved, key)) {
      // Up: the value comes back where its parent still is (a client that removed the parent removed it too).
      if (parent && !Object.hasOwn(parent, name)) parent[name] = preserved[key];
      delete preserved[key];
      touched = true;
    }
  }
  if (touched) writePreserved(out, preserved);
  return out as T;
}
