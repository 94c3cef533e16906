/**
 * The caches keep what the reconciler reads: drift still names the other
 * managers that changed a field after an owned object is slimmed.
 */
import type { CachedObject } from '../../kube/informer.js';
import { slimCluster, slimOwnedObject } from '../../reconciler/memory/cache-slimming.js';
import { findDrift } from '../../reconciler/core/drift.js';
import type { KubeObject } from '../../model/kube-object.js';

const desired: KubeObject = { apiVersion: 'apps/v1', kind: 'StatefulSet', metadata: { name: 'kv', namespace: 'ns' }, spec: { replicas: 3 } };

function liveStatefulSet(): CachedObject {
  return {
    apiVersion: 'apps/v1', kind: 'StatefulSet',
    metadata: {
      name: 'kv', namespace: 'ns', uid: 'u1',
      annotations: { 'kubectl.kubernetes.io/last-applied-configuration': '{"big":"copy"}', keep: 'me' },
      managedFields: [
        { manager: 'dkv-controller', operation: 'Apply', time: '2026-01-01T00:00:00Z', fieldsV1: { 'f:spec': { 'f:replicas': {} } } },
        { manager: 'kube-controller-manager', operation: 'Update', subresource: 'status', time: '2026-01-01T00:00:01Z', fieldsV1: { 'f:status': { 'f:replicas': {} } } },
        { manager: 'kubectl', operation: 'Update', subresource: 'scale', time: '2026-01-01T00:00:02Z', fieldsV1: { 'f:spec': { 'f:replicas': {} } } },
      ],
    },
    spec: { replicas: 4 },
    status: { replicas: 4 },
  } as CachedObject;
}

describe('what the caches keep', () => {
  it('an owned object loses our own entry, status-subresource entries and the last-applied copy; other writers stay', () => {
    const slim = slimOwnedObject(liveStatefulSet(), 'dkv-controller');
    expect((slim.metadata.managedFields as { manager: string }[]).map((m) => m.manager)).toEqual(['kubectl']);
    expect(slim.metadata.annotations).toEqual({ keep: 'me' });
    expect(slim.spec).toEqual({ replicas: 4 });
    expect(slim.status).toEqual({ replicas: 4 });
  });

  it('drift on the slimmed object names the same writer as on the full one', () => {
    const full = findDrift(desired, liveStatefulSet() as any, 'dkv-controller');
    const slim = findDrift(desired, slimOwnedObject(liveStatefulSet(), 'dkv-controller') as any, 'dkv-controller');
    expect(full).toEqual([{ path: 'spec.replicas', manager: 'kubectl (scale)' }]);
    expect(slim).toEqual(full);
  });

  it('a DistributedKV loses its managedFields, nothing else', () => {
    const cr = { apiVersion: 'example.com/v1beta1', kind: 'DistributedKV', metadata: { name: 'kv', namespace: 'ns', uid: 'u2', finalizers: ['f'], managedFields: [{ manager: 'kubectl' }] }, spec: { size: 3 }, status: { readyReplicas: 1 } } as CachedObject;
    const slim = slimCluster(structuredClone(cr));
    const { managedFields: _dropped, ...metadata } = cr.metadata;
    expect(slim).toEqual({ ...cr, metadata });
  });
});
