/**
 * Every object the controller writes for a cluster carries the cluster's
 * shard bucket (kube/shard-buckets.ts) in the configured label, and so do
 * the backup Jobs its CronJob starts (the job template's labels) and the
 * Secrets cert-manager writes for its Certificates (their secretTemplate's), whatever
 * mode the controller runs in: a later switch to sharded replicas finds
 * every child already labelled, and a re-shard never relabels anything.
 *
 * Added after synthesis, outside the desired hash: `dkv synth` (no uid yet)
 * and the controller hash alike. A live object without the label differs
 * from the desired one and is written once, like any drift. reconcile.ts
 * labels only what the cluster creates or controls: objects another tool
 * applied from `dkv synth` output stay unwritten while identical.
 */
import type { GeneratorConfig } from '../../api/config.js';
import { bucketOf } from '../../kube/shard-buckets.js';
import type { KubeObject } from '../../model/kube-object.js';

type Labelled = { metadata?: { labels?: Record<string, string> } };

export function withBucketLabel(object: KubeObject, clusterUid: string, config: GeneratorConfig): KubeObject {
  const { bucketLabel, buckets } = config.sharding;
  const value = String(bucketOf(clusterUid, buckets));
  const label = <T extends Labelled>(o: T): T => ({ ...o, metadata: { ...o.metadata, labels: { ...o.metadata?.labels, [bucketLabel]: value } } });
  const labelled = label(object as KubeObject & Labelled) as KubeObject;
  if (object.kind === 'Certificate') {
    // cert-manager copies secretTemplate's labels onto the Secret it writes: a shard's Secret cache selects it by the bucket too.
    const spec = (object as unknown as { spec: { secretTemplate?: { labels?: Record<string, string> } } }).spec;
    return { ...labelled, spec: { ...spec, secretTemplate: { ...spec.secretTemplate, labels: { ...spec.secretTemplate?.labels, [bucketLabel]: value } } } } as unknown as KubeObject;
  }
  if (object.kind !== 'CronJob') return labelled;
  const spec = (object as unknown as { spec: { jobTemplate: Labelled } }).spec;
  return { ...labelled, spec: { ...spec, jobTemplate: label(spec.jobTemplate) } } as unknown as KubeObject;
}
