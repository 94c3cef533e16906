/**
 * The shard bucket label on what the controller writes: on every object and
 * on the backup CronJob's job template, outside the desired hash, and a live
 * object without it is planned as a write once (then never again).
 */
import { loadDefaultConfig } from '../../api/config.js';
import { validateDistributedKV } from '../../api/validate.js';
import { synthesizeCluster } from '../../constructs/synthesize.js';
import { bucketOf } from '../../kube/shard-buckets.js';
import type { CachedObject } from '../../kube/informer.js';
import { desiredHash } from '../../model/desired-hash.js';
import { withBucketLabel } from '../../reconciler/core/bucket-label.js';
import { ClusterMemory } from '../../reconciler/memory/cluster-memory.js';
import { planWrites } from '../../reconciler/core/plan-writes.js';

const config = loadDefaultConfig();
const UID = '3f2504e0-4f89-11d3-9a0c-0305e82c3301';
const LABEL = config.sharding.bucketLabel;

function desired() {
  const result = validateDistributedKV({ apiVersion: 'example.com/v1beta1', kind: 'DistributedKV', metadata: { name: 'kv', namespace: 'shop' },
    spec: { size: 3, image: 'registry.k8s.io/etcd:3.6.8-0', backup: { s3Path: 's3://b/kv', schedule: '@daily' } } }, config);
  if (!result.valid) throw new Error('invalid test spec');
  return synthesizeCluster(result.resource, config);
}

describe('the shard bucket label', () => {
  it('labels every object and the backup Jobs\' template with the cluster\'s bucket, leaving the desired hash as dkv synth computes it', () => {
    const objects = desired();
    const labelled = objects.map((o) => withBucketLabel(o, UID, config));
    const bucket = String(bucketOf(UID, config.sharding.buckets));
    expect(bucket).toBe(String(0xa6)); // the top 8 bits of 0xa6fb… (256 buckets)
    for (const [i, o] of labelled.entries()) {
      expect(o.metadata.labels?.[LABEL]).toBe(bucket);
      expect(objects[i].metadata.labels?.[LABEL]).toBeUndefined(); // the input is untouched
      expect(desiredHash(o, config.hashAnnotation)).not.toBe(o.metadata.annotations?.[config.hashAnnotation]); // the label is not hashed…
      expect(o.metadata.annotations?.[config.hashAnnotation]).toBe(objects[i].metadata.annotations?.[config.hashAnnotation]); // …so the annotation stays synth's
    }
    const cronJob = labelled.find((o) => o.kind === 'CronJob') as any;
    expect(cronJob.spec.jobTemplate.metadata.labels[LABEL]).toBe(bucket);
    expect(cronJob.spec.jobTemplate.spec).toEqual((objects.find((o) => o.kind === 'CronJob') as any).spec.jobTemplate.spec);
  });

  it('labels the Secrets cert-manager writes for a cluster\'s Certificates (their secretTemplate), so a shard\'s Secret cache sees them', () => {
    const withIssuer = { ...config, tls: { ...config.tls, certManager: { issuerRef: { name: 'shop-ca', kind: 'Issuer' as const, group: 'cert-manager.io' } } } };
    const result = validateDistributedKV({ apiVersion: 'example.com/v1beta1', kind: 'DistributedKV', metadata: { name: 'kv', namespace: 'shop' },
      spec: { size: 3, image: 'registry.k8s.io/etcd:3.6.8-0', tls: { mode: 'cert-manager' } } }, withIssuer);
    if (!result.valid) throw new Error('invalid test spec');
    const certificates = synthesizeCluster(result.resource, withIssuer).filter((o) => o.kind === 'Certificate');
    expect(certificates).toHaveLength(2);
    for (const certificate of certificates) {
      const labelled = withBucketLabel(certificate, UID, withIssuer) as any;
      expect(labelled.spec.secretTemplate.labels).toEqual({ ...(certificate as any).spec.secretTemplate.labels, [LABEL]: String(bucketOf(UID, config.sharding.buckets)) });
      expect({ ...labelled.spec, secretTemplate: undefined }).toEqual({ ...(certificate as any).spec, secretTemplate: undefined });
    }
  });

  it('writes a live object without the label once, as drift of that label, and nothing once it has it', () => {
    const labelled = desired().map((o) => withBucketLabel(o, UID, config));
    const owner = [{ apiVersion: 'example.com/v1beta1', kind: 'DistributedKV', name: 'kv', uid: UID, controller: true }];
    const plan = (strip: boolean) => {
      const live = new Map<string, CachedObject>(labelled.map((o) => {
        const copy = JSON.parse(JSON.stringify(o));
        copy.metadata.ownerReferences = owner;
        if (strip) {
          delete copy.metadata.labels[LABEL];
          if (copy.kind === 'CronJob') delete copy.spec.jobTemplate.metadata.labels[LABEL];
        }
        return [`${o.kind}/${o.metadata.name}`, copy];
      }));
      const memory = new ClusterMemory();
      return planWrites({
        desired: labelled, live, owned: [...live.values()], clusterUid: UID, hashAnnotation: config.hashAnnotation, fieldManager: config.controller.fieldManager,
        detectOnly: false, previouslyGenerated: new Set(), memoryOf: (n) => memory.object('shop/kv', n), now: 0,
      });
    };
    const before = plan(true);
    expect(before.writes.map((w) => w.reason)).toEqual(labelled.map(() => 'drift'));
    for (const w of before.writes) expect(w.drift.map((d) => d.path)).toContain(`metadata.labels.${LABEL}`);
    expect(plan(false).writes).toEqual([]);
  });
});
