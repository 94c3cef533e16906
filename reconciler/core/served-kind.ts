/**
 * Whether the API server serves a kind another project defines (the
 * Prometheus Operator's PodMonitor), read from discovery: its CRD may be
 * installed, or removed, while the controller runs. The answer is kept for
 * a while, so a fleet of clusters costs one discovery read per interval,
 * not one per reconcile.
 */
import type { KubeClient } from '../../kube/client.js';
import { KubeApiError } from '../../kube/client.js';

/** How long an answer is kept: a CRD installed later is seen within this. */
export const SERVED_KIND_TTL_MS = 30_000;

/** Asks discovery of `group/version` whether it lists `plural`; a group the server does not know answers 404: not served. */
export async function servesKind(client: KubeClient, apiVersion: string, plural: string): Promise<boolean> {
  try {
    const discovery = await client.request<{ resources?: { name: string }[] }>('GET', `/apis/${apiVersion}`);
    return (discovery.resources ?? []).some((r) => r.name === plural);
  } catch (e) {
    if (e instanceof KubeApiError && e.status === 404) return false;
    throw e;
  }
}

/** servesKind, its answer kept for `ttlMs` (errors are not kept: the next reconcile asks again). */
export function servedKindProbe(client: KubeClient, apiVersion: string, plural: string, now: () => number, ttlMs = SERVED_KIND_TTL_MS): () => Promise<boolean> {
  let kept: { served: boolean; at: number } | undefined;
  return async () => {
    if (kept && now() - kept.at < ttlMs) return kept.served;
    const served = await servesKind(client, apiVersion, plural);
    kept = { served, at: now() };
    return served;
  };
}
