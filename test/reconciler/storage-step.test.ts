/**
 * The storage step (day2/storage-step.ts) reads through a reader and says
 * which one write comes next; the core makes it. Read here with a reader
 * that serves claims, a StorageClass and pods from memory: no API server.
 */
import type { CachedObject } from '../../kube/informer.js';
import type { KubeObject } from '../../model/kube-object.js';
import { storageStep, type StorageReader } from '../../reconciler/day2/storage-step.js';

const HASH = 'dkv.example.com/desired-hash';
const CLUSTER_UID = 'uid-orders';
const STS_UID = 'uid-sts';
const cr = { apiVersion: 'example.com/v1beta1', kind: 'DistributedKV', metadata: { name: 'orders', namespace: 'shop', uid: CLUSTER_UID } } as unknown as CachedObject;
const statefulSet = (size: string) => ({
  apiVersion: 'apps/v1', kind: 'StatefulSet',
  metadata: { name: 'orders', namespace: 'shop', uid: STS_UID, ownerReferences: [{ apiVersion: 'example.com/v1beta1', kind: 'DistributedKV', name: 'orders', uid: CLUSTER_UID, controller: true }] },
  spec: { replicas: 3, selector: { matchLabels: { app: 'orders' } }, volumeClaimTemplates: [{ metadata: { name: 'data' }, spec: { storageClassName: 'fast', resources: { requests: { storage: size } } } }] },
});
const claims = (requested: string, capacity: string) => Object.fromEntries([0, 1, 2].map((i) => [`data-orders-${i}`, { metadata: { name: `data-orders-${i}` }, spec: { resources: { requests: { storage: requested } } }, status: { capacity: { storage: capacity } } }]));
const adoptedPods = [0, 1, 2].map((i) => ({ metadata: { name: `orders-${i}`, ownerReferences: [{ apiVersion: 'apps/v1', kind: 'StatefulSet', name: 'orders', uid: STS_UID, controller: true }] } }) as unknown as CachedObject);

function reader(claimsByName: Record<string, unknown>, pods: CachedObject[] = adoptedPods): StorageReader & { reads: string[] } {
  const reads: string[] = [];
  return {
    reads,
    claim: async (_ns, name) => { reads.push(`claim ${name}`); return claimsByName[name] as never; },
    storageClass: async (name) => { reads.push(`storageClass ${name}`); return { name: name ?? 'default', allowVolumeExpansion: true }; },
    memberPods: async () => { reads.push('pods'); return pods; },
  };
}

describe('the storage step', () => {
  const desired = statefulSet('20Gi') as unknown as KubeObject;
  const live = statefulSet('10Gi') as unknown as CachedObject;

  it('reads nothing and writes nothing while the size is the template\'s, in any spelling', async () => {
    const read = reader({});
    expect(await storageStep(read, cr, statefulSet('10240Mi') as unknown as KubeObject, live, false, HASH)).toEqual({ step: { kind: 'unchanged' }, statefulSet: statefulSet('10240Mi') });
    expect(read.reads).toEqual([]);
  });

  it('asks to grow the first claim that is short, and keeps the live volume template on the StatefulSet meanwhile', async () => {
    const result = await storageStep(reader(claims('10Gi', '10Gi')), cr, desired, live, false, HASH);
    expect(result.step.kind).toBe('resizeClaim');
    expect(result.write).toEqual({ kind: 'resizeClaim', namespace: 'shop', claim: 'data-orders-0', size: '20Gi' });
    expect(result.changed).toBe('data-orders-0 grows to 20Gi');
    expect((result.statefulSet as any).spec.volumeClaimTemplates[0].spec.resources.requests.storage).toBe('10Gi');
    expect(result.statefulSet.metadata.annotations?.[HASH]).toBeDefined();
  });

  it('asks for no write in detect-only mode', async () => {
    const result = await storageStep(reader(claims('10Gi', '10Gi')), cr, desired, live, true, HASH);
    expect(result.step.kind).toBe('resizeClaim');
    expect(result.write).toBeUndefined();
  });

  it('asks to replace the StatefulSet (only the one judged, by uid) once every claim holds the size and every member pod is adopted', async () => {
    const read = reader(claims('20Gi', '20Gi'));
    const result = await storageStep(read, cr, desired, live, false, HASH);
    expect(result.write).toEqual({ kind: 'replaceStatefulSet', namespace: 'shop', name: 'orders', uid: STS_UID });
    expect(read.reads).toContain('pods');
  });

  it('waits, writing nothing, while a member pod is not yet adopted', async () => {
    const orphan = { metadata: { name: 'orders-2' } } as unknown as CachedObject;
    const result = await storageStep(reader(claims('20Gi', '20Gi'), [...adoptedPods.slice(0, 2), orphan]), cr, desired, live, false, HASH);
    expect(result.step).toMatchObject({ kind: 'waiting' });
    expect(result.write).toBeUndefined();
  });

  it('leaves refusing a shrink to the core: the step only says so', async () => {
    const result = await storageStep(reader(claims('10Gi', '10Gi')), cr, statefulSet('5Gi') as unknown as KubeObject, live, false, HASH);
    expect(result.step).toMatchObject({ kind: 'refused' });
    expect(result.write).toBeUndefined();
  });
});
