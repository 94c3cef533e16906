/**
 * Drift: a live object that no longer holds a value the controller set.
 * Found from the informer cache alone (no request per object): the desired
 * object says which fields we set and to what; the live object says what
 * they hold; `managedFields` says who wrote them last. Fields we never set
 * (server defaults, other managers' additions) are not drift.
 */
import type { KubeObject } from '../../model/kube-object.js';
import { dottedPath, type PathSegment } from '../../model/field-path.js';
import { quantityValue } from '../../model/quantity.js';

export interface DriftedField {
  /** Dotted path, list items by name where they have one: `spec.template.spec.containers[kv].image`. */
  readonly path: string;
  /** The field manager that last wrote the field, where managedFields tells. */
  readonly manager?: string;
}

/** The API server rewrites quantities into canonical form (`1000m` → `1`, `2` → `"2"`); compare their values. */
function sameScalar(desired: unknown, live: unknown): boolean {
  if (desired === live) return true;
  if ((typeof desired !== 'string' && typeof desired !== 'number') || (typeof live !== 'string' && typeof live !== 'number')) return false;
  const a = quantityValue(desired);
  const b = quantityValue(live);
  if (a === undefined || b === undefined) return false;
  return Math.abs(a - b) <= 1e-9 * Math.max(1, Math.abs(a));
}

/**
 * Paths where `live` does not hold what `desired` says. Maps compare key by
 * key (extra live keys are someone else's); lists of named items match by
 * name, other lists by position, and extra live items are not ours.
 *
 * `path` is one stack, pushed and popped on the way down, and copied only
 * where a difference is found: almost every field matches, and a copy per
 * field was 7% of what the controller allocated while converging (~80 KB
 * per new cluster, for the check after each apply).
 */
function diff(desired: unknown, live: unknown, path: PathSegment[], out: PathSegment[][]): void {
  if (Array.isArray(desired)) {
    if (!Array.isArray(live)) {
      out.push([...path]);
      return;
    }
    const named = desired.every((d) => d && typeof d === 'object' && typeof (d as { name?: unknown }).name === 'string');
    for (let i = 0; i < desired.length; i++) {
      const d: unknown = desired[i];
      let segment: PathSegment = i;
      let match: unknown;
      if (named) {
        const name = (d as { name: string }).name;
        segment = { name };
        match = live.find((l) => l && typeof l === 'object' && (l as { name?: unknown }).name === name);
      } else if (i < live.length) {
        match = live[i];
      }
      path.push(segment);
      if (match === undefined) out.push([...path]);
      else diff(d, match, path, out);
      path.pop();
    }
    return;
  }
  if (desired !== null && typeof desired === 'object') {
    if (live === null || typeof live !== 'object' || Array.isArray(live)) {
      out.push([...path]);
      return;
    }
    for (const key of Object.keys(desired)) {
      const value = (desired as Record<string, unknown>)[key];
      if (value === undefined) continue;
      path.push(key);
      diff(value, (live as Record<string, unknown>)[key], path, out);
      path.pop();
    }
    return;
  }
  if (!sameScalar(desired, live)) out.push([...path]);
}

/** A managedFields `fieldsV1` set: `f:name`, `i:index`, `k:{key}` or `v:value` keys, `.` for the node itself. */
interface FieldsTree {
  readonly [key: string]: FieldsTree;
}

/** One entry of `metadata.managedFields`: who wrote which fields, through which subresource. */
export interface ManagedFieldsEntry {
  manager?: string;
  operation?: string;
  time?: string;
  subresource?: string;
  fieldsV1?: FieldsTree;
}

/**
 * Whether a managedFields list-map key (`k:{"name":"kv"}`, or for ports
 * `k:{"containerPort":2379,"protocol":"TCP"}`) names the live list item
 * that the path calls `[name]`.
 */
function keyMatches(key: Record<string, unknown>, name: string, item: unknown): boolean {
  if ('name' in key) return key.name === name;
  return item !== null && typeof item === 'object' && Object.entries(key).every(([k, v]) => (item as Record<string, unknown>)[k] === v);
}

/** The node of a managedFields `fieldsV1` tree at the path, if the manager owns anything there. */
function ownedNode(fields: FieldsTree | undefined, path: readonly PathSegment[], live: unknown): FieldsTree | undefined {
  let node = fields;
  let value = live;
  for (const segment of path) {
    if (!node) return undefined;
    if (typeof segment === 'string') {
      node = node[`f:${segment}`];
      value = value !== null && typeof value === 'object' ? (value as Record<string, unknown>)[segment] : undefined;
    } else if (typeof segment === 'number') {
      node = node[`i:${segment}`];
      value = Array.isArray(value) ? value[segment] : undefined;
    } else {
      const item = Array.isArray(value) ? value.find((v) => v !== null && typeof v === 'object' && v.name === segment.name) : undefined;
      const key = Object.keys(node).find((k) => k.startsWith('k:') && keyMatches(JSON.parse(k.slice(2)), segment.name, item));
      node = key ? node[key] : undefined;
      value = item;
    }
  }
  return node;
}

/**
 * Whether a manager owns the path: the leaf itself, or a parent it owns as a
 * whole (an atomic list or map is recorded as an empty node, `f:args: {}`).
 * A parent with children recorded (`f:spec: {f:minReadySeconds: {}}`) says
 * only that the manager owns something below it, not this field.
 */
function owns(fields: FieldsTree | undefined, path: readonly PathSegment[], live: unknown): boolean {
  if (ownedNode(fields, path, live) !== undefined) return true;
  for (let n = path.length - 1; n > 0; n--) {
    const node = ownedNode(fields, path.slice(0, n), live);
    if (node === undefined) continue;
    return Object.keys(node).length === 0;
  }
  return false;
}

/** The most recent manager other than ours that owns the path. */
function lastWriter(entries: readonly ManagedFieldsEntry[], path: readonly PathSegment[], live: unknown, ourManager: string): string | undefined {
  let best: ManagedFieldsEntry | undefined;
  for (const entry of entries) {
    if (entry.manager === ourManager) continue;
    if (owns(entry.fieldsV1, path, live) && (!best || (entry.time ?? '') >= (best.time ?? ''))) best = entry;
  }
  return best ? `${best.manager}${best.subresource ? ` (${best.subresource})` : ''}` : undefined;
}

/**
 * Metadata the controller sets but does not compare: the namespace says where
 * an object is, not what it holds, and owner references (set on every apply)
 * are ownership, which ownership.ts judges, not content.
 */
const NOT_COMPARED = new Set(['ownerReferences', 'namespace']);

/**
 * Every field the desired object sets that the live object no longer holds,
 * each with the manager that last wrote it.
 */
export function findDrift(desired: KubeObject, live: { metadata: Record<string, unknown>; [key: string]: unknown }, ourManager: string): DriftedField[] {
  const paths: PathSegment[][] = [];
  const { metadata, apiVersion: _a, kind: _k, ...body } = desired;
  for (const [key, value] of Object.entries(metadata)) {
    if (NOT_COMPARED.has(key) || value === undefined) continue;
    diff(value, live.metadata?.[key], ['metadata', key], paths);
  }
  diff(body, live, [], paths);
  const managed = (live.metadata?.managedFields ?? []) as ManagedFieldsEntry[];
  return paths.map((path) => ({ path: dottedPath(path), manager: lastWriter(managed, path, live, ourManager) }));
}
