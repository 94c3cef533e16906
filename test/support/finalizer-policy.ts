import { loadDefaultConfig } from '../../api/config.js';
import { API_VERSION, KIND } from '../../api/validate.js';
import { renderInstall } from '../../cli/install-command.js';
import { resourcePath, type KubeClient } from '../../kube/client.js';
import type { KubeObject } from '../../model/kube-object.js';
import { eventually } from './eventually.js';

/** The kinds `dkv install --finalizer-policy` adds to the bundle. */
const POLICY_KINDS = new Set(['MutatingAdmissionPolicy', 'MutatingAdmissionPolicyBinding']);

/** The bundle's final-backup finalizer policy and its binding, as `dkv install --finalizer-policy [--watch-namespace]` writes them. */
export function finalizerPolicyObjects(watchNamespace?: string): KubeObject[] {
  return renderInstall({ finalizerPolicy: true, watchNamespace }).filter((o) => POLICY_KINDS.has(o.kind));
}

/**
 * Applies the policy and waits until the API server enforces it: the API
 * server loads admission policies from its own informer, so for a moment
 * after the apply a create goes through unchanged. A dry-run create (which
 * runs admission, and stores nothing) in `namespace` shows when it holds.
 */
export async function applyFinalizerPolicy(client: KubeClient, namespace: string, watchNamespace?: string, deadlineMs = 30_000): Promise<void> {
  for (const object of finalizerPolicyObjects(watchNamespace)) await client.apply(object, { fieldManager: 'dkv-test', force: true });
  const finalizer = loadDefaultConfig().backup.final.finalizer;
  const probe = { apiVersion: API_VERSION, kind: KIND, metadata: { name: 'finalizer-policy-probe', namespace }, spec: { size: 1, image: 'kv:1', backup: { s3Path: 's3://probe/probe', schedule: '@daily' } } };
  await eventually('the final-backup finalizer policy to be in force', async () => {
    const created = await client.request('POST', resourcePath(API_VERSION, KIND, namespace), { body: probe, query: { dryRun: 'All' } });
    return (created.metadata.finalizers ?? []).includes(finalizer) ? true : undefined;
  }, deadlineMs, 200);
}
