/**
 * A label selector that matches every given label exactly
 * (`k1=v1,k2=v2`), as the API server's `labelSelector` query takes it.
 */
export function equalitySelector(labels: Readonly<Record<string, string>>): string {
  return Object.entries(labels).map(([k, v]) => `${k}=${v}`).join(',');
}
