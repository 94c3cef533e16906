import { createHash } from 'node:crypto';

function writeCanonical(value: unknown, out: string[]): void {
  if (value === null || typeof value !== 'object') {
    out.push(JSON.stringify(value) ?? 'null');
  } else if (Array.isArray(value)) {
    out.push('[');
    value.forEach((item, i) => {
      if (i > 0) out.push(',');
      writeCanonical(item === undefined ? null : item, out);
    });
    out.push(']');
  } else {
    out.push('{');
    let first = true;
    for (const key of Object.keys(value).sort()) {
      const item = (value as Record<string, unknown>)[key];
      if (item === undefined) continue;
      out.push(first ? '' : ',', JSON.stringify(key), ':');
      first = false;
      writeCanonical(item, out);
    }
    out.push('}');
  }
}

/**
 * JSON with object keys sorted at every level: the same content always gives
 * the same bytes, whatever order it was built in.
 */
export function canonicalJson(value: unknown): string {
  const out: string[] = [];
  writeCanonical(value, out);
  return out.join('');
}

/** The shape every generated object has; the rest is kind-specific. */
export interface KubeObject {
  apiVersion: string;
  kind: string;
  metadata: {
    name: string;
    namespace?: string;
    labels?: Record<string, string>;
    annotations?: Record<string, string>;
    ownerReferences?: unknown[];
    [key: string]: unknown;
  };
  [key: string]: unknown;
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
  return createHash('sha256').update(canonicalJson(content)).digest('hex');
}

/** Returns the object with its hash annotation set (a new object; the input is untouched). */
export function withDesiredHash(object: KubeObject, hashAnnotation: string): KubeObject {
  const hash = desiredHash(object, hashAnnotation);
  return { ...object, metadata: { ...object.metadata, annotations: { ...object.metadata.annotations, [hashAnnotation]: hash } } };
}
