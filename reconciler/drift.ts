/**
 * Drift: a live object that no longer holds a value the controller set.
 * Found from the informer cache alone (no request per object): the desired
 * object says which fields we set and to what; the live object says what
 * they hold; `managedFields` says who wrote them last. Fields we never set
 * (server defaults, other managers' additions) are not drift.
 */
import type { KubeObject } from '../constructs/hash.js';

export interface DriftedField {
  /** Dotted path, list items by name where they have one: `spec.template.spec.containers[kv].image`. */
  readonly path: string;
  /** The field manager that last wrote the field, where managedFields tells. */
  readonly manager?: string;
}

type Segment = string | { readonly name: string } | number;

const QUANTITY = /^([+-]?[0-9.]+)(m|k|M|G|T|P|E|Ki|Mi|Gi|Ti|Pi|Ei|[eE][+-]?[0-9]+)?$/;
const FACTORS: Record<string, number> = { m: 1e-3, '': 1, k: 1e3, M: 1e6, G: 1e9, T: 1e12, P: 1e15, E: 1e18, Ki: 2 ** 10, Mi: 2 ** 20, Gi: 2 ** 30, Ti: 2 ** 40, Pi: 2 ** 50, Ei: 2 ** 60 };

/** The API server rewrites quantities into canonical form (`1000m` → `1`, `2` → `"2"`); compare their values. */
function sameScalar(desired: unknown, live: unknown): boolean {
  if (desired === live) return true;
  if ((typeof desired !== 'string' && typeof desired !== 'number') || (typeof live !== 'string' && typeof live !== 'number')) return false;
  const a = QUANTITY.exec(String(desired));
  const b = QUANTITY.exec(String(live));
  if (!a || !b) return false;
  const value = (m: RegExpExecArray): number => Number(m[1]) * (m[2] && /^[eE]/.test(m[2]) ? 10 ** Number(m[2].slice(1)) : FACTORS[m[2] ?? '']);
  return Math.abs(value(a) - value(b)) <= 1e-9 * Math.max(1, Math.abs(value(a)));
}

function segmentText(segment: Segment): string {
  if (typeof segment === 'number') return `[${segment}]`;
  if (typeof segment === 'object') return `[${segment.name}]`;
  return segment;
}

export function dottedFieldPath(segments: readonly Segment[]): string {
  return segments.reduce<string>((path, s) => (typeof s === 'string' ? (path ? `${path}.${s}` : s) : path + segmentText(s)), '');
}

/**
 * Paths where `live` does not hold what `desired` says. Maps compare key by
 * key (extra live keys are someone else's); lists of named items match by
 * name, other lists by position, and extra live items are not ours.
 */
function diff(desired: unknown, live: unknown, path: Segment[], out: Segment[][]): void {
  if (Array.isArray(desired)) {
    if (!Array.isArray(live)) {
      out.push(path);
      return;
    }
    const named = desired.every((d) => d && typeof d === 'object' && typeof (d as { name?: unknown }).name === 'string');
    desired.forEach((d, i) => {
      if (named) {
        const name = (d as { name: string }).name;
        const match = live.find((l) => l && typeof l === 'object' && (l as { name?: unknown }).name === name);
        if (match === undefined) out.push([...path, { name }]);
        else diff(d, match, [...path, { name }], out);
      } else if (i >= live.length) {
        out.push([...path, i]);
      } else {
        diff(d, live[i], [...path, i], out);
      }
    });
    return;
  }
  if (desired !== null && typeof desired === 'object') {
    if (live === null || typeof live !== 'object' || Array.isArray(live)) {
      out.push(path);
      return;
    }
    for (const [key, value] of Object.entries(desired)) {
      if (value === undefined) continue;
      diff(value, (live as Record<string, unknown>)[key], [...path, key], out);
    }
    return;
  }
  if (!sameScalar(desired, live)) out.push(path);
}

interface ManagedFieldsEntry {
  manager?: string;
  operation?: string;
  time?: string;
  subresource?: string;
  fieldsV1?: Record<string, any>;
}

/** Whether a managedFields `fieldsV1` tree covers the path (or a prefix of it, for whole-list ownership). */
function owns(fields: Record<string, any> | undefined, path: readonly Segment[]): boolean {
  let node = fields;
  for (const segment of path) {
    if (!node) return false;
    if (typeof segment === 'string') {
      node = node[`f:${segment}`];
    } else {
      const keys = Object.keys(node);
      const key = typeof segment === 'number'
        ? keys.find((k) => k === `i:${segment}`)
        : keys.find((k) => k.startsWith('k:') && (JSON.parse(k.slice(2)) as { name?: string }).name === segment.name);
      if (!key) return false;
      node = node[key];
    }
  }
  return node !== undefined;
}

/** The most recent manager other than ours whose fields cover the path. */
function lastWriter(entries: readonly ManagedFieldsEntry[], path: readonly Segment[], ourManager: string): string | undefined {
  let best: ManagedFieldsEntry | undefined;
  for (const entry of entries) {
    if (entry.manager === ourManager) continue;
    // Ownership is recorded down to the leaf or at a parent; try the path and its parents.
    let covered = false;
    for (let n = path.length; n > 0 && !covered; n--) covered = owns(entry.fieldsV1, path.slice(0, n));
    if (covered && (!best || (entry.time ?? '') >= (best.time ?? ''))) best = entry;
  }
  return best ? `${best.manager}${best.subresource ? ` (${best.subresource})` : ''}` : undefined;
}

/** Metadata the controller sets but does not compare: owner references are added only when it creates. */
const NOT_COMPARED = new Set(['ownerReferences', 'namespace']);

/**
 * Every field the desired object sets that the live object no longer holds,
 * each with the manager that last wrote it.
 */
export function findDrift(desired: KubeObject, live: { metadata: Record<string, any>; [key: string]: any }, ourManager: string): DriftedField[] {
  const paths: Segment[][] = [];
  const { metadata, apiVersion: _a, kind: _k, ...body } = desired;
  for (const [key, value] of Object.entries(metadata)) {
    if (NOT_COMPARED.has(key) || value === undefined) continue;
    diff(value, live.metadata?.[key], ['metadata', key], paths);
  }
  diff(body, live, [], paths);
  const managed = (live.metadata?.managedFields ?? []) as ManagedFieldsEntry[];
  return paths.map((path) => ({ path: dottedFieldPath(path), manager: lastWriter(managed, path, ourManager) }));
}
