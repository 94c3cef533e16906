/**
 * What the controller issues for a DistributedKV and never generates: its
 * TLS Secrets (reconciler/day2/tls-step.ts), created once, never pruned,
 * replaced only by rotation (core/certificate-rotation-writes.ts). Label-selected like the generated kinds, so the cache holds the
 * Secrets the controller labelled and no other Secret of the cluster.
 */
export const ISSUED_KINDS = [
  { apiVersion: 'v1', kind: 'Secret' },
] as const;
