/**
 * A time as Kubernetes writes one (metav1.Time): RFC 3339, UTC, to the
 * second. Status fields and condition times written this way compare equal
 * to what the API server hands back, so an unchanged status is not rewritten.
 */
export function metaTime(at: number | string | Date): string {
  return new Date(typeof at === 'string' ? Date.parse(at) : at).toISOString().replace(/\.\d+Z$/, 'Z');
}
