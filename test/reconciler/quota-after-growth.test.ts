/**
 * Growing storage.size raises a member's derived quota (half its volume, at
 * most 8Gi), and the members reach it the way every pod-template change
 * reaches them: one restart at a time, followers first, the leader last
 * after leadership moved. While the claims grow, the StatefulSet keeps the
 * pod template the members run (their quota is the one their volumes have
 * room for); the StatefulSet that replaces it carries the new volume
 * template and the raised quota, adopts the running pods (their
 * controller-revision-hash names the old template) and the upgrade step
 * (day2/membership-step.ts, engines/etcd/upgrade.ts) restarts them onto it.
 * The same steps the core runs (core/reconcile.ts), read here with claims,
 * pods and members in memory: no API server, no etcd.
 */
import { loadConfig } from '../../api/config.js';
import { validateDistributedKV, type ValidResource } from '../../api/validate.js';
import { synthesizeCluster } from '../../constructs/synthesize.js';
import type { MemberPod } from '../../engines/etcd/upgrade.js';
import type { Membership, MembershipStatus, MemberStatus } from '../../engines/membership.js';
import type { CachedObject } from '../../kube/informer.js';
import type { KubeObject } from '../../model/kube-object.js';
import { membershipStep, type MembershipReader } from '../../reconciler/day2/membership-step.js';
import { storageStep, volumeSizeOf, type StorageReader } from '../../reconciler/day2/storage-step.js';
import type { QuorumLossLooks } from '../../reconciler/day2/quorum-loss-clock.js';
import type { UnhealthyLooks } from '../../reconciler/day2/unhealthy-memory.js';

/** Every look that sees the quorum lost counts as a loss already proven (quorum-loss-clock.ts is tested on its own). */
/** As if this process had looked before and seen what status says (unhealthy-memory.ts is tested on its own). */
const trustedStatus: UnhealthyLooks = { previous: () => ({ has: () => true }) as unknown as ReadonlySet<string>, remember: () => undefined };
const provenLoss: QuorumLossLooks = { look: (_uid, lost, _now, requiredMs) => (lost ? { forMs: requiredMs, looks: 3, requiredMs } : { forMs: 0, looks: 0, requiredMs }) };

const config = loadConfig();
const HASH = config.hashAnnotation;
const ETCD = 'registry.k8s.io/etcd:3.6.8-0';
const CLUSTER_UID = 'uid-kv';
const cr = { apiVersion: 'example.com/v1beta1', kind: 'DistributedKV', metadata: { name: 'kv', namespace: 'shop', uid: CLUSTER_UID } } as unknown as CachedObject;
const PLAN = { replicas: 3, state: 'existing' } as const;

function resource(size: string): ValidResource {
  const result = validateDistributedKV({ apiVersion: 'example.com/v1beta1', kind: 'DistributedKV', metadata: { name: 'kv', namespace: 'shop' }, spec: { size: 3, image: ETCD, storage: { size } } }, config);
  if (!result.valid) throw new Error('invalid test spec');
  return { ...result.resource, metadata: { ...result.resource.metadata, namespace: 'shop' } };
}

type StatefulSetObject = KubeObject & { spec: { template: { spec: { containers: { args: string[] }[] } }; volumeClaimTemplates: { spec: { resources: { requests: { storage: string } } } }[] } };
const statefulSetOf = (objects: KubeObject[]) => objects.find((o) => o.kind === 'StatefulSet') as StatefulSetObject;
const quotaOf = (sts: StatefulSetObject) => sts.spec.template.spec.containers[0].args.find((a) => a.startsWith('--quota-backend-bytes='));

/** A StatefulSet as the API server serves it: this cluster's, with the StatefulSet controller's status. */
function live(sts: StatefulSetObject, uid: string, status: Record<string, unknown>): CachedObject {
  return {
    ...sts,
    metadata: { ...sts.metadata, uid, generation: 1, ownerReferences: [{ apiVersion: 'example.com/v1beta1', kind: 'DistributedKV', name: 'kv', uid: CLUSTER_UID, controller: true }] },
    status: { observedGeneration: 1, replicas: 3, ...status },
  } as unknown as CachedObject;
}

function storageReader(size: string, capacity: string, owner: string): StorageReader {
  return {
    claim: async (_ns, name) => ({ metadata: { name }, spec: { resources: { requests: { storage: size } } }, status: { capacity: { storage: capacity } } }),
    storageClass: async () => ({ name: 'fast', allowVolumeExpansion: true }),
    memberPods: async () => [0, 1, 2].map((i) => ({ metadata: { name: `kv-${i}`, ownerReferences: [{ apiVersion: 'apps/v1', kind: 'StatefulSet', name: 'kv', uid: owner, controller: true }] } }) as unknown as CachedObject),
  };
}

describe('a storage growth that raises the derived quota', () => {
  const before = statefulSetOf(synthesizeCluster(resource('10Gi'), config, PLAN));
  const liveBefore = live(before, 'uid-sts-1', { updatedReplicas: 3, currentRevision: 'r1', updateRevision: 'r1' });

  it('keeps the members\' pod template, and their quota, while the claims grow and when the StatefulSet is replaced', async () => {
    expect(quotaOf(before)).toBe(`--quota-backend-bytes=${5 * 2 ** 30}`);
    // What the core renders while the live StatefulSet still has 10Gi volumes.
    const during = statefulSetOf(synthesizeCluster(resource('20Gi'), config, PLAN, { volumeSizeNow: volumeSizeOf(liveBefore) }));
    for (const [claims, kind] of [[storageReader('10Gi', '10Gi', 'uid-sts-1'), 'resizeClaim'], [storageReader('20Gi', '10Gi', 'uid-sts-1'), 'waiting'], [storageReader('20Gi', '20Gi', 'uid-sts-1'), 'replaceStatefulSet']] as const) {
      const step = await storageStep(claims, cr, during, liveBefore, false, HASH);
      expect(step.step.kind).toBe(kind);
      // The same pod template: the same revision, so no member restarts while its volume grows.
      expect((step.statefulSet as StatefulSetObject).spec.template).toEqual(before.spec.template);
      expect((step.statefulSet as StatefulSetObject).spec.volumeClaimTemplates[0].spec.resources.requests.storage).toBe('10Gi');
    }
  });

  it('creates the StatefulSet again with the new volume template and the raised quota, and then restarts the members onto it one at a time, the leader last', async () => {
    // The StatefulSet was deleted (its pods left running): nothing live to read a size from.
    expect(volumeSizeOf(undefined)).toBeUndefined();
    const after = statefulSetOf(synthesizeCluster(resource('20Gi'), config, PLAN, { volumeSizeNow: volumeSizeOf(undefined) }));
    expect(quotaOf(after)).toBe(`--quota-backend-bytes=${8 * 2 ** 30}`);
    expect(after.spec.volumeClaimTemplates[0].spec.resources.requests.storage).toBe('20Gi');
    expect(after.spec.template).not.toEqual(before.spec.template);
    // The image did not change: only the arguments did, and that is enough to roll.
    expect(after.spec.template.spec.containers[0]).toMatchObject({ image: ETCD });

    // The new StatefulSet counts its own template current (r2) and the adopted pods, labelled r1, outdated.
    const oldArgs = before.spec.template.spec.containers[0].args as string[];
    let pods: MemberPod[] = [0, 1, 2].map((i) => ({ name: `kv-${i}`, uid: `pod-${i}`, resourceVersion: '1', revision: 'r1', image: ETCD, args: oldArgs, deleting: false }));
    const said: string[] = [];
    let leader = 'kv-0';
    const order: string[] = [];
    for (let reconcile = 0; reconcile < 10 && pods.some((p) => p.revision !== 'r2'); reconcile++) {
      const updated = pods.filter((p) => p.revision === 'r2').length;
      const sts = live(after, 'uid-sts-2', { updatedReplicas: updated, currentRevision: 'r2', updateRevision: 'r2' });
      const decision = await membershipStep(reader(sts, pods, leader), cr, resource('20Gi'), false);
      const write = decision?.write;
      if (write?.kind === 'restartMember') {
        order.push(write.pod.name);
        said.push(decision!.result.upgrade!.message, decision!.result.restarted!);
        // Recreated by the StatefulSet controller on the new template, healthy again before the next look.
        pods = pods.map((p) => (p.name === write.pod.name ? { ...p, uid: `${p.uid}'`, revision: 'r2' } : p));
      } else if (write?.kind === 'moveLeader') {
        order.push(`leader to ${write.toPod}`);
        leader = write.toPod;
      } else {
        throw new Error(`no step: ${JSON.stringify(decision?.result.upgrade)}`);
      }
    }
    expect(order).toEqual(['kv-2', 'kv-1', 'leader to kv-1', 'kv-0']);
    // A roll for the arguments alone says so, naming the one that changed; nothing claims a new image.
    const raised = `new arguments (--quota-backend-bytes=${8 * 2 ** 30})`;
    expect(said.slice(0, 2)).toEqual([`restarting kv-2 with ${raised} (0 of 3 updated)`, `restarted kv-2 (outdated) with ${raised}`]);
    expect(said.filter((m) => m.includes(ETCD))).toEqual([]);
    expect(pods.every((p) => p.revision === 'r2')).toBe(true);
  });
});

function reader(sts: CachedObject, pods: MemberPod[], leader: string): MembershipReader {
  const members: MemberStatus[] = [0, 1, 2].map((i) => ({ id: `id${i}`, name: `kv-${i}`, peerUrls: [`https://kv-${i}.kv-peers:2380`], learner: false, healthy: true, leader: `kv-${i}` === leader, alarms: [] }));
  const status: MembershipStatus = { members, voters: 3, healthyVoters: 3, leaderId: members.find((m) => m.leader)!.id, alarms: [] };
  const refuse = async (): Promise<never> => { throw new Error('the step changed the members itself'); };
  const membership: Membership = {
    status: async () => status, addLearner: refuse, promote: refuse, remove: refuse, updatePeerUrls: refuse, moveLeader: refuse, defragment: refuse, compact: refuse, disarm: refuse, hashKV: refuse,
  };
  const configMap = { metadata: { name: 'kv-members' }, data: { ETCD_INITIAL_CLUSTER: 'kv-0=a,kv-1=b,kv-2=c', ETCD_INITIAL_CLUSTER_STATE: 'new' } } as unknown as CachedObject;
  // Every member's claim bound: nothing to heal.
  const claims = new Map([0, 1, 2].map((i) => [`kv-${i}`, { name: `data-kv-${i}`, uid: `claim-${i}`, deleting: false, phase: 'Bound' }]));
  return {
    config, statefulSet: sts, configMap, members: () => membership, memberPods: async () => pods,
    healing: { pods: async () => new Map(), claims: async () => claims }, recovery: { record: async () => undefined }, quorumLoss: provenLoss, unhealthy: trustedStatus, now: () => Date.parse('2026-11-26T12:00:00Z'),
  };
}
