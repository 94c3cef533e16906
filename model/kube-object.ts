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
