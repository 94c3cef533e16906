/**
 * The served versions of the DistributedKV API, all derived from the one
 * JSON Schema (api/distributedkv.schema.json), which describes the newest
 * (storage) version. A field the schema marks `"x-dkv-since": "<version>"`
 * does not exist in the versions served before that one: their schemas
 * leave it out, their TypeScript types are generated without it, and
 * conversion keeps its value in an annotation on the way down
 * (api/conversion.ts). Adding a version is adding it here and marking its
 * new fields; nothing else holds a copy of a version's shape.
 */

/** The API group of every version. */
export const API_GROUP = 'example.com';

/** Oldest first. The last is the storage version, the one the controller reads and writes. */
export const SERVED_VERSIONS = ['v1alpha1', 'v1beta1'] as const;

export type ServedVersion = (typeof SERVED_VERSIONS)[number];

/** The version objects are stored in (and the one every layer of this project works in). */
export const STORAGE_VERSION: ServedVersion = SERVED_VERSIONS[SERVED_VERSIONS.length - 1];

/** The schema keyword that names the version a field was added in. */
export const SINCE = 'x-dkv-since';

/** `example.com/v1beta1` → `v1beta1`, or undefined for another group or an unserved version. */
export function servedVersionOf(apiVersion: unknown): ServedVersion | undefined {
  if (typeof apiVersion !== 'string' || !apiVersion.startsWith(`${API_GROUP}/`)) return undefined;
  const version = apiVersion.slice(API_GROUP.length + 1);
  return (SERVED_VERSIONS as readonly string[]).includes(version) ? (version as ServedVersion) : undefined;
}

function rank(version: string): number {
  const index = (SERVED_VERSIONS as readonly string[]).indexOf(version);
  if (index < 0) throw new Error(`${SINCE}: ${JSON.stringify(version)} is not a served version (${SERVED_VERSIONS.join(', ')})`);
  return index;
}

/** Whether a field marked `since` exists in `version`. */
function existsIn(since: unknown, version: ServedVersion): boolean {
  return since === undefined || rank(String(since)) <= rank(version);
}

/**
 * The JSON Schema of one served version: the source schema without the
 * fields added after it, `$id` made unique per version so both compile in
 * one validator.
 */
export function schemaForVersion(schema: Record<string, any>, version: ServedVersion): Record<string, any> {
  const strip = (node: unknown): unknown => {
    if (Array.isArray(node)) return node.map(strip);
    if (typeof node !== 'object' || node === null) return node;
    const out: Record<string, unknown> = {};
    for (const [key, value] of Object.entries(node)) {
      if (key === 'properties' && typeof value === 'object' && value !== null) {
        const properties: Record<string, unknown> = {};
        for (const [name, child] of Object.entries(value as Record<string, any>)) {
          if (existsIn(child?.[SINCE], version)) properties[name] = strip(child);
        }
        out[key] = properties;
      } else {
        out[key] = strip(value);
      }
    }
    return out;
  };
  const derived = strip(schema) as Record<string, any>;
  derived.$id = `${schema.$id}/${version}`;
  return derived;
}

/** A field some served versions cannot hold: its path from the object's root, and the version it appeared in. */
export interface VersionedField {
  readonly path: readonly string[];
  readonly since: ServedVersion;
}

/**
 * Every field marked `x-dkv-since`, found by walking objects' properties
 * (through `$ref`s) from the root. Inside an array there is no stable path
 * to keep a value under, so a mark there is refused rather than silently
 * dropped on conversion.
 */
export function versionedFields(schema: Record<string, any>): VersionedField[] {
  const found: VersionedField[] = [];
  const resolve = (node: Record<string, any>): Record<string, any> =>
    typeof node.$ref === 'string' ? resolve(schema.definitions[node.$ref.replace('#/definitions/', '')]) : node;
  const refuseInside = (node: unknown, where: string): void => {
    if (typeof node !== 'object' || node === null) return;
    if (SINCE in node) throw new Error(`${SINCE} inside an array (${where}) cannot be converted: give the field a path outside arrays`);
    for (const value of Object.values(node)) refuseInside(value, where);
  };
  const walk = (node: Record<string, any>, path: string[]): void => {
    const resolved = resolve(node);
    if (resolved.items) refuseInside(resolve(resolved.items), path.join('.'));
    for (const [name, child] of Object.entries<Record<string, any>>(resolved.properties ?? {})) {
      const childPath = [...path, name];
      if (child[SINCE] !== undefined) {
        rank(child[SINCE]);
        found.push({ path: childPath, since: child[SINCE] });
        continue; // its own children travel with it
      }
      walk(child, childPath);
    }
  };
  walk(schema, []);
  return found;
}

/** Whether a field that appeared in `since` is missing from `version`. */
export function missingFrom(field: VersionedField, version: ServedVersion): boolean {
  return !existsIn(field.since, version);
}
