import { hash } from 'node:crypto';
import type { KubeObject } from './kube-object.js';

/**
 * The value with object keys sorted at every level, returning the input
 * itself where it already is (cdk8s emits sorted keys, so usually nothing is
 * copied and the native JSON.stringify does the rest).
 */
function sortedKeys(value: unknown): unknown {
  if (value === null || typeof value !== 'object') return value;
  if (Array.isArray(value)) {
    let copy: unknown[] | undefined;
    for (let i = 0; i < value.length; i++) {
      const item = sortedKeys(value[i]);
      if (item !== value[i]) (copy ??= value.slice())[i] = item;
    }
    return copy ?? value;
  }
  const keys = Object.keys(value);
  let sorted = true;
  for (let i = 1; i < keys.length && sorted; i++) sorted = keys[i - 1] < keys[i];
  let copy: Record<string, unknown> | undefined;
  if (!sorted) {
    copy = {};
    for (const key of [...keys].sort()) copy[key] = (value as Record<string, unknown>)[key];
  }
  for (const key of keys) {
    const item = (value as Record<string, unknown>)[key];
    const canonical = sortedKeys(item);
    if (canonical !== item) (copy ??= { ...(value as Record<string, unknown>) })[key] = canonical;
  }
  return copy ?? value;
}

/**
 * JSON with object keys sorted at every level: the same content always gives
 * the same bytes, whatever order it was built in.
 */
export function canonicalJson(value: unknown): string {
  return JSON.stringify(sortedKeys(value)) ?? 'null';
}

/**
 * sha256 of an object's desired content: everything the generator decides,
 * excluding the hash annotation itself, the namespace (where the object
 * goes, not what it is: CI output without a namespace and the controller's
 * render in one must hash alike) and owner references (added by the
 * controller, not by the spec).
 */
export function desiredHash(object: KubeObject, hashAnnotation: string): string {
  const { namespace: _namespace, ownerReferences: _owners, annotations, ...metadata } = object.metadata;
  const otherAnnotations = Object.fromEntries(Object.entries(annotations ?? {}).filter(([k]) => k !== hashAnnotation));
  const content = { ...object, metadata: { ...metadata, annotations: otherAnnotations } };
  // The one-shot hash: no Hash object per call, which cost a sixth of the hashing of these small documents.
  return hash('sha256', canonicalJson(content), 'hex');
}

/** Returns the object with its hash annotation set (a new object; the input is untouched). */
export function withDesiredHash(object: KubeObject, hashAnnotation: string): KubeObject {
  const hash = desiredHash(object, hashAnnotation);
  return { ...object, metadata: { ...object.metadata, annotations: { ...object.metadata.annotations, [hashAnnotation]: hash } } };
}
