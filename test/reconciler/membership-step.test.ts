/**
 * The membership step (day2/membership-step.ts) reads the members and the
 * cluster's own objects through a reader and says the one change to make;
 * the core makes it (core/execute-writes.ts) and, when the members refuse,
 * reports it as not made yet (membershipNotYet). Read here with members in
 * memory: no API server, no etcd, and nothing the step could write through.
 */
import { loadConfig } from '../../api/config.js';
import { validateDistributedKV, type ValidResource } from '../../api/validate.js';
import type { MemberPod } from '../../engines/etcd/upgrade.js';
import type { Membership, MembershipStatus, MemberStatus } from '../../engines/membership.js';
import type { CachedObject } from '../../kube/informer.js';
import { membershipNotYet, membershipStep, recordedPlan, type MembershipReader } from '../../reconciler/day2/membership-step.js';
import { synthesizeCluster } from '../../constructs/synthesize.js';
import type { HealingClaim, HealingPod } from '../../engines/etcd/replacement.js';
import type { RecoveryRecord } from '../../engines/etcd/rebuild.js';
import { QuorumLossClock, type QuorumLossLooks } from '../../reconciler/day2/quorum-loss-clock.js';
import { UnhealthyMemory, type UnhealthyLooks } from '../../reconciler/day2/unhealthy-memory.js';

/** Every look that sees the quorum lost counts as a loss already proven (quorum-loss-clock.ts is tested on its own). */
/** As if this process had looked before and seen what status says (unhealthy-memory.ts is tested on its own). */
const trustedStatus: UnhealthyLooks = { previous: () => ({ has: () => true }) as unknown as ReadonlySet<string>, remember: () => undefined };
const provenLoss: QuorumLossLooks = { look: (_uid, lost, _now, requiredMs) => (lost ? { forMs: requiredMs, looks: 3, requiredMs } : { forMs: 0, looks: 0, requiredMs }) };

const config = loadConfig();
const ETCD = 'registry.k8s.io/etcd:3.6.8-0';
const cr = { apiVersion: 'example.com/v1beta1', kind: 'DistributedKV', metadata: { name: 'kv', namespace: 'shop', uid: 'uid-kv' } } as unknown as CachedObject;

function resource(size: number, image = ETCD): ValidResource {
  const result = validateDistributedKV({ apiVersion: 'example.com/v1beta1', kind: 'DistributedKV', metadata: { name: 'kv', namespace: 'shop' }, spec: { size, image } }, config);
  if (!result.valid) throw new Error('invalid test spec');
  return { ...result.resource, metadata: { ...result.resource.metadata, namespace: 'shop' } };
}

const member = (i: number, over: Partial<MemberStatus> = {}): MemberStatus =>
  ({ id: `id${i}`, name: `kv-${i}`, peerUrls: [`http://kv-${i}.kv-peers:2380`], learner: false, healthy: true, leader: i === 0, version: '3.6.8', alarms: [], ...over });
const statusOf = (members: MemberStatus[]): MembershipStatus =>
  ({ members, voters: members.filter((m) => !m.learner).length, healthyVoters: members.filter((m) => !m.learner && m.healthy).length, leaderId: 'id0', alarms: [] });

/** Members that answer `status` and refuse to be changed by the step itself. */
function members(status: MembershipStatus): Membership {
  const refuse = async (): Promise<never> => { throw new Error('the step changed the membership itself'); };
  return {
    status: async () => status, addLearner: refuse, promote: refuse, remove: refuse, updatePeerUrls: refuse, moveLeader: refuse, defragment: refuse, compact: refuse, disarm: refuse, hashKV: refuse,
  };
}

function statefulSet(replicas: number, image = ETCD, status: Record<string, unknown> = {}): CachedObject {
  return {
    apiVersion: 'apps/v1', kind: 'StatefulSet', metadata: { name: 'kv', namespace: 'shop', generation: 1 },
    spec: { replicas, template: { spec: { containers: [{ name: 'etcd', image }] } } },
    status: { observedGeneration: 1, replicas, updatedReplicas: replicas, currentRevision: 'r1', updateRevision: 'r1', ...status },
  } as unknown as CachedObject;
}
const configMap = (replicas: number) => ({ metadata: { name: 'kv-members' }, data: { ETCD_INITIAL_CLUSTER: Array.from({ length: replicas }, (_, i) => `kv-${i}=http://kv-${i}.kv-peers:2380`).join(','), ETCD_INITIAL_CLUSTER_STATE: 'existing' } }) as unknown as CachedObject;

const NOW = Date.parse('2026-11-26T12:00:00Z');
/** The claims of `replicas` members, bound; `over` replaces some by ordinal. */
const claimsOf = (replicas: number, over: Record<number, Partial<HealingClaim>> = {}): Map<string, HealingClaim> =>
  new Map(Array.from({ length: replicas }, (_, i) => [`kv-${i}`, { name: `data-kv-${i}`, uid: `claim-${i}`, deleting: false, phase: 'Bound', ...over[i] }]));

/** The member pods as replacement reads them, each running (uid pod-<i>). */
const livePodsOf = (replicas: number): Map<string, HealingPod> =>
  new Map(Array.from({ length: replicas }, (_, i) => [`kv-${i}`, { name: `kv-${i}`, uid: `pod-${i}`, deleting: false, createdAtMs: NOW - 60_000 }]));

function reader(status: MembershipStatus, sts?: CachedObject, pods: MemberPod[] = [], claims?: Map<string, HealingClaim>, record?: RecoveryRecord): MembershipReader {
  const replicas = (sts?.spec?.replicas as number | undefined) ?? 0;
  return {
    config, statefulSet: sts, configMap: sts && configMap(sts.spec!.replicas as number), members: () => members(status), memberPods: async () => pods,
    healing: { pods: async () => livePodsOf(replicas), claims: async () => claims ?? claimsOf(replicas) },
    recovery: { record: async () => record }, quorumLoss: provenLoss, unhealthy: trustedStatus,
    now: () => NOW,
  };
}

describe('the membership step', () => {
  it('is not asked for an engine without a membership', async () => {
    expect(await membershipStep({ ...reader(statusOf([])), config: { ...config, engine: 'generic' } }, cr, resource(3), false)).toBeUndefined();
  });

  it('asks for no change while the membership is the spec\'s and every member runs the image', async () => {
    const decision = await membershipStep(reader(statusOf([member(0), member(1), member(2)]), statefulSet(3)), cr, resource(3), false);
    expect(decision?.write).toBeUndefined();
    expect(decision?.result).toMatchObject({ phase: 'Stable', plan: { replicas: 3, state: 'existing' } });
  });

  it('asks to promote a learner that runs, and says what renders if the members refuse', async () => {
    const decision = (await membershipStep(reader(statusOf([member(0), member(1), member(2), member(3, { learner: true })]), statefulSet(4)), cr, resource(4), false))!;
    expect(decision.write).toMatchObject({ kind: 'membership', action: { type: 'promote', id: 'id3', pod: 'kv-3' } });
    expect(decision.result).toMatchObject({ phase: 'ScalingOut', changed: 'promoted kv-3 to a voting member' });
    const notYet = membershipNotYet(decision, 'too many learners');
    expect(notYet.changed).toBeUndefined();
    expect(notYet.message).toBe('promoting kv-3 to a voting member: not yet (too many learners)');
  });

  it('asks for nothing in detect-only mode, and renders what the member ConfigMap records', async () => {
    const decision = await membershipStep(reader(statusOf([member(0), member(1), member(2), member(3, { learner: true })]), statefulSet(4)), cr, resource(4), true);
    expect(decision?.write).toBeUndefined();
    expect(decision?.result.plan).toEqual({ replicas: 4, state: 'existing' });
  });

  it('asks to restart an outdated follower for an upgrade (that pod, by uid and resourceVersion), once the new template is applied', async () => {
    const next = 'registry.k8s.io/etcd:3.6.9-0';
    const args: string[] = []; // the template's and the pods' alike
    const pod = (i: number, image: string, revision: string): MemberPod => ({ name: `kv-${i}`, uid: `pod-uid-${i}`, resourceVersion: `${10 + i}`, revision, image, args, deleting: false });
    const sts = statefulSet(3, next, { updateRevision: 'r2', currentRevision: 'r1', updatedReplicas: 0 });
    const decision = (await membershipStep(reader(statusOf([member(0), member(1), member(2)]), sts, [pod(0, ETCD, 'r1'), pod(1, ETCD, 'r1'), pod(2, ETCD, 'r1')]), cr, resource(3, next), false))!;
    expect(decision.write).toMatchObject({ kind: 'restartMember', namespace: 'shop', pod: { name: 'kv-2', uid: 'pod-uid-2', resourceVersion: '12' }, change: next });
    // Only the image changed: the restart says that, and no arguments.
    expect(decision.result.restarted).toBe('restarted kv-2 (outdated) with registry.k8s.io/etcd:3.6.9-0');
    const notYet = membershipNotYet(decision, 'the pod changed');
    expect(notYet.restarted).toBeUndefined();
    expect(notYet.upgrade?.message).toMatch(/: not yet \(the pod changed\)$/);
  });

  it('switches the peer URL of a member whose pod came back from the TLS template out of band, though every pod runs the template (issue 40)', async () => {
    const args = ['--listen-peer-urls=https://0.0.0.0:2380', '--listen-client-urls=https://0.0.0.0:2379', '--peer-cert-file=/tls/member/tls.crt'];
    const sts = statefulSet(3);
    (sts.spec as any).template.spec.containers[0].args = args;
    const pods = [0, 1, 2].map((i): MemberPod => ({ name: `kv-${i}`, uid: `pod-uid-${i}`, resourceVersion: '1', revision: 'r1', image: ETCD, args, deleting: false }));
    const https = (i: number) => member(i, { peerUrls: [`https://kv-${i}.kv-peers:2380`] });
    const decision = (await membershipStep(reader(statusOf([https(0), member(1), https(2)]), sts, pods), cr, resource(3), false))!;
    expect(decision.write).toMatchObject({ kind: 'updatePeerUrls', id: 'id1', pod: 'kv-1', peerUrls: ['https://kv-1.kv-peers:2380'] });
    // Every URL https: settled, nothing to do.
    const done = (await membershipStep(reader(statusOf([https(0), https(1), https(2)]), sts, pods), cr, resource(3), false))!;
    expect(done.write).toBeUndefined();
    expect(done.result.upgrade).toMatchObject({ upgrading: false });
  });

  describe('member replacement', () => {
    const withStatus = (members: { name: string; healthy: boolean; unhealthySince?: string }[], conditions: unknown[] = []) =>
      ({ ...cr, status: { members: members.map((m) => ({ role: 'follower', ...m })), conditions } }) as unknown as CachedObject;

    it('starts a member\'s clock when it is first seen unhealthy, and keeps it while it stays unhealthy', async () => {
      const sick = statusOf([member(0), member(1, { healthy: false }), member(2)]);
      const first = (await membershipStep(reader(sick, statefulSet(3)), cr, resource(3), false))!;
      expect(first.write).toBeUndefined();
      expect(first.result.unhealthySince).toEqual(new Map([['kv-1', '2026-11-26T12:00:00Z']]));
      expect(first.result.healing).toMatchObject({ status: 'False', reason: 'MemberUnhealthy', message: expect.stringMatching(/kv-1 unhealthy since \S+Z/) });
      const later = (await membershipStep(reader(sick, statefulSet(3)), withStatus([{ name: 'kv-1', healthy: false, unhealthySince: '2026-11-26T11:49:00Z' }]), resource(3), false))!;
      expect(later.result.unhealthySince).toEqual(new Map([['kv-1', '2026-11-26T11:49:00Z']]));
      // 11 minutes: longer than the default 10.
      expect(later.write).toMatchObject({ kind: 'healing', action: { type: 'mark', pod: 'kv-1', memberId: 'id1', claim: { name: 'data-kv-1', uid: 'claim-1' } }, annotation: config.healing.replacementAnnotation });
      expect(later.result).toMatchObject({ phase: 'Replacing', plan: { replicas: 3, state: 'existing' }, healing: { status: 'True', reason: 'Replacing' }, healingEvent: { reason: 'MemberReplacing' } });
    });

    it('trusts a clock carried in status only for a member this process saw unhealthy at its last look (issue 40): a restarted controller starts it again', async () => {
      const sick = statusOf([member(0), member(1, { healthy: false }), member(2)]);
      const old = withStatus([{ name: 'kv-1', healthy: false, unhealthySince: '2026-11-26T11:00:00Z' }]);
      const memory = new UnhealthyMemory();
      const look = () => membershipStep({ ...reader(sick, statefulSet(3)), unhealthy: memory }, old, resource(3), false);
      // Before the fix: an hour-old clock from a status written before the controller was down, and kv-1 replaced at once.
      const first = (await look())!;
      expect(first.write).toBeUndefined();
      expect(first.result.unhealthySince).toEqual(new Map([['kv-1', '2026-11-26T12:00:00Z']]));
      // Seen unhealthy at the last look by this process: status's clock is its own, carried on.
      const second = (await look())!;
      expect(second.result.unhealthySince).toEqual(new Map([['kv-1', '2026-11-26T11:00:00Z']]));
      expect(second.write).toMatchObject({ kind: 'healing', action: { type: 'mark', pod: 'kv-1' } });
    });

    it('holds the StatefulSet at its size while the removed member is one short, where scaling would have lowered replicas', async () => {
      const short = statusOf([member(0), member(2)]);
      const decision = (await membershipStep(reader(short, statefulSet(3), [], claimsOf(3, { 1: { uid: 'new-claim' } })), cr, resource(3), false))!;
      expect(decision.write).toMatchObject({ kind: 'healing', action: { type: 'addLearner', pod: 'kv-1', peerUrl: 'http://kv-1.kv-peers:2380' } });
      expect(decision.result.plan).toEqual({ replicas: 3, state: 'existing' });
    });

    it('starts no replacement during an upgrade', async () => {
      const sick = statusOf([member(0), member(1, { healthy: false }), member(2)]);
      const cluster = withStatus([{ name: 'kv-1', healthy: false, unhealthySince: '2026-11-26T11:00:00Z' }]);
      const decision = (await membershipStep(reader(sick, statefulSet(3, ETCD, { updateRevision: 'r2' })), cluster, resource(3), false))!;
      expect(decision.write?.kind).not.toBe('healing');
      expect(decision.result.healing).toMatchObject({ status: 'False', reason: 'MemberUnhealthy', message: expect.stringMatching(/waits: a rolling upgrade is under way/) });
    });

    it('starts no replacement while the last status says a defragmentation is under way (issue 40: a controller restarted in the middle of one)', async () => {
      const sick = statusOf([member(0), member(1, { healthy: false, problem: 'context deadline exceeded' }), member(2)]);
      const defragmenting = { type: 'Maintenance', status: 'True', reason: 'Defragmenting', message: 'defragmenting kv-1 (900 MiB, 80% free) (at least 50% free); 1 more after it' };
      const cluster = withStatus([{ name: 'kv-1', healthy: false, unhealthySince: '2026-11-26T11:00:00Z' }], [defragmenting]);
      const decision = (await membershipStep(reader(sick, statefulSet(3)), cluster, resource(3), false))!;
      expect(decision.write?.kind).not.toBe('healing');
      expect(decision.result.healing).toMatchObject({ status: 'False', reason: 'MemberUnhealthy', message: expect.stringMatching(/waits: a defragmentation is under way \(defragmenting kv-1/) });
      // Idle or held: the replacement goes on.
      const idle = withStatus([{ name: 'kv-1', healthy: false, unhealthySince: '2026-11-26T11:00:00Z' }], [{ ...defragmenting, status: 'False', reason: 'Held' }]);
      expect((await membershipStep(reader(sick, statefulSet(3)), idle, resource(3), false))!.write).toMatchObject({ kind: 'healing', action: { type: 'mark', pod: 'kv-1' } });
    });

    it('says MemberReplaced when the replaced member\'s learner is promoted', async () => {
      const joined = statusOf([member(0), member(1, { learner: true }), member(2)]);
      const cluster = withStatus([], [{ type: 'Healing', status: 'True', reason: 'Replacing', message: 'replacing kv-1: adding it as a learner' }]);
      const decision = (await membershipStep(reader(joined, statefulSet(3)), cluster, resource(3), false))!;
      expect(decision.write).toMatchObject({ kind: 'membership', action: { type: 'promote', pod: 'kv-1' } });
      expect(decision.result.healingEvent).toMatchObject({ reason: 'MemberReplaced' });
    });
  });
});

describe('a replaced member added back while another pod has no member', () => {
  // kv-1 and kv-4 both failed and were removed (etcd adds no member while a voter is down); kv-1 is added back first.
  const three = statusOf([member(0), member(2), member(3)]);
  const marked = claimsOf(5, { 1: { replacing: 'id1' }, 4: { replacing: 'id4' } });

  it('renders a member list of exactly the members the membership will have, so the new pod can join (etcd: "member count is unequal" otherwise)', async () => {
    const decision = (await membershipStep(reader(three, statefulSet(5), [], marked), cr, resource(5), false))!;
    expect(decision.write).toMatchObject({ kind: 'healing', action: { type: 'addLearner', pod: 'kv-1' } });
    expect(decision.result.plan).toEqual({ replicas: 5, state: 'existing', members: [0, 1, 2, 3] });
    const rendered = synthesizeCluster(resource(5), config, decision.result.plan);
    const memberConfig = rendered.find((o) => o.kind === 'ConfigMap' && o.metadata.name === 'kv-members') as unknown as { data: Record<string, string> };
    expect(memberConfig.data.ETCD_INITIAL_CLUSTER.split(',').map((e) => e.split('=')[0])).toEqual(['kv-0', 'kv-1', 'kv-2', 'kv-3']);
    expect((rendered.find((o) => o.kind === 'StatefulSet') as unknown as { spec: { replicas: number } }).spec.replicas).toBe(5);
  });

  it('reads such a list back as the StatefulSet\'s pods up to its last, with its gap', () => {
    const gap = { metadata: { name: 'kv-members' }, data: { ETCD_INITIAL_CLUSTER: 'kv-0=http://a:2380,kv-2=http://b:2380,kv-3=http://c:2380,kv-4=http://d:2380', ETCD_INITIAL_CLUSTER_STATE: 'existing' } } as unknown as CachedObject;
    expect(recordedPlan(gap)).toEqual({ replicas: 5, state: 'existing', members: [0, 2, 3, 4] });
    expect(recordedPlan(configMap(3))).toEqual({ replicas: 3, state: 'existing' });
  });
});

const annotated = (value: string) => ({ ...cr, metadata: { ...cr.metadata, annotations: { [config.healing.recoveryAnnotation]: value } } }) as CachedObject;

describe('a lost quorum (recovery-step.ts)', () => {
  const lost = statusOf([member(0, { healthy: false, leader: false, problem: 'no leader', raftTerm: 4, raftIndex: 90 }), member(1, { healthy: false, leader: false, problem: 'refused' }), member(2, { healthy: false, leader: false, problem: 'refused' })]);

  it('is hands-off without a request: QuorumLost, no write, no Healing report, no Event', async () => {
    const decision = (await membershipStep(reader(lost, statefulSet(3)), cr, resource(3), false))!;
    expect(decision.write).toBeUndefined();
    expect(decision.result.phase).toBe('QuorumLost');
    expect(decision.result.healing).toBeUndefined();
    expect(decision.result.recoveryEvent).toBeUndefined();
  });

  it('refuses a request naming a member that does not answer, with the Healing report and a Warning Event, and removes the request only', async () => {
    const decision = (await membershipStep(reader(lost, statefulSet(3)), annotated('kv-2'), resource(3), false))!;
    expect(decision.write).toMatchObject({ kind: 'recovery', action: { type: 'consume' } });
    expect(decision.result.healing).toMatchObject({ status: 'False', reason: 'RecoveryRefused', message: expect.stringMatching(/^recovery from kv-2 refused: it does not answer.*; the request is removed$/) });
    expect(decision.result.recoveryEvent).toEqual({ type: 'Warning', reason: 'RecoveryRefused', message: decision.result.healing!.message });
  });

  it('accepts auto by recording the decision first (the recovery ConfigMap), with a Warning Event, and changes nothing else', async () => {
    const decision = (await membershipStep(reader(lost, statefulSet(3)), annotated('auto'), resource(3), false))!;
    expect(decision.write).toMatchObject({ kind: 'recovery', action: { type: 'record', pod: 'kv-0', memberId: 'id0', sourcePodUid: 'pod-0' } });
    expect(decision.result.healing).toMatchObject({ status: 'True', reason: 'Recovering', message: expect.stringMatching(/^recovering from kv-0 \(term 4, index 90\).*recording the decision/) });
    expect(decision.result.recoveryEvent).toMatchObject({ type: 'Warning', reason: 'RecoveryStarted' });
    expect(decision.ifWriteFails?.recoveryEvent).toBeUndefined();
  });

  it('in detect-only mode judges a request and writes nothing', async () => {
    const decision = (await membershipStep(reader(lost, statefulSet(3)), annotated('auto'), resource(3), true))!;
    expect(decision.write).toBeUndefined();
    expect(decision.result.recoveryEvent).toBeUndefined();
  });

  it('refuses and removes a request made while the quorum holds, so that it can never fire on a later blip (issue 40, defect 1)', async () => {
    const decision = (await membershipStep(reader(statusOf([member(0), member(1), member(2)]), statefulSet(3)), annotated('auto'), resource(3), false))!;
    // Before the fix: ignored and kept, to be acted on at the first look that sees two members down.
    expect(decision.write).toMatchObject({ kind: 'recovery', action: { type: 'consume' } });
    expect(decision.result.healing).toMatchObject({ status: 'False', reason: 'RecoveryRefused', message: expect.stringMatching(/the cluster has a quorum/) });
    expect(decision.result.recoveryEvent).toMatchObject({ type: 'Warning', reason: 'RecoveryRefused' });
  });

  it('waits, keeping the request, until the controller has seen the loss on enough looks for long enough', async () => {
    const clock = new QuorumLossClock();
    const looks: Array<Awaited<ReturnType<typeof membershipStep>>> = [];
    for (const at of [0, 10_000, 20_000, 60_000]) looks.push(await membershipStep({ ...reader(lost, statefulSet(3)), quorumLoss: clock, now: () => NOW + at }, annotated('auto'), resource(3), false));
    for (const early of looks.slice(0, 3)) {
      expect(early!.write).toBeUndefined();
      expect(early!.result.healing).toMatchObject({ status: 'False', reason: 'RecoveryWaiting', message: expect.stringMatching(/healing.quorumLossSeconds/) });
    }
    expect(looks[3]!.write).toMatchObject({ kind: 'recovery', action: { type: 'record', pod: 'kv-0' } });
  });

  it('says each step of a recorded recovery in a Normal Event: a claim marked, then the source restarted', async () => {
    const record: RecoveryRecord = { name: 'kv-recovery', uid: 'cm-1', createdAtMs: NOW - 5_000, pod: 'kv-0', memberId: 'id0', id: 'r1', sourcePodUid: 'pod-0' };
    const marking = (await membershipStep(reader(lost, statefulSet(3), [], undefined, record), annotated('auto'), resource(3), false))!;
    expect(marking.write).toMatchObject({ kind: 'recovery', action: { type: 'mark', pod: 'kv-1', memberId: 'id1' } });
    expect(marking.result.recoveryEvent).toEqual({ type: 'Normal', reason: 'Recovering', message: 'marked kv-1\'s claim: it joins the rebuilt cluster empty' });
    const restarting = (await membershipStep(reader(lost, statefulSet(3), [], claimsOf(3, { 1: { replacing: 'id1' }, 2: { replacing: 'id2' } }), record), annotated('auto'), resource(3), false))!;
    expect(restarting.write).toMatchObject({ kind: 'recovery', action: { type: 'restartSource', pod: 'kv-0', uid: 'pod-0' } });
    expect(restarting.result.recoveryEvent).toMatchObject({ type: 'Normal', reason: 'Recovering', message: expect.stringMatching(/^restarted kv-0/) });
    expect(restarting.result.healing).toMatchObject({ status: 'True', reason: 'Recovering' });
  });

  it('carries a recorded recovery on once the rebuilt member holds a quorum: the replacement adds the first marked member back, reported as the recovery', async () => {
    const record: RecoveryRecord = { name: 'kv-recovery', uid: 'cm-1', createdAtMs: NOW - 30_000, pod: 'kv-0', memberId: 'id0', id: 'r1', sourcePodUid: 'pod-0-old' };
    const rebuilt = statusOf([member(0, { id: 'new0' })]);
    const claims = claimsOf(3, { 1: { replacing: 'id1' }, 2: { replacing: 'id2' } });
    const decision = (await membershipStep(reader(rebuilt, statefulSet(3), [], claims, record), annotated('auto'), resource(3), false))!;
    expect(decision.write).toMatchObject({ kind: 'healing', action: { type: 'addLearner', pod: 'kv-1' } });
    expect(decision.result.plan).toEqual({ replicas: 3, state: 'existing', members: [0, 1] });
    expect(decision.result.healing).toMatchObject({ status: 'True', reason: 'Recovering', message: expect.stringMatching(/^recovering from kv-0 \(member id0\): it runs as a one-member cluster.*; replacing kv-1: adding it back/) });
  });
});

describe('a recovery under way, with its request removed before its record (a controller killed between the two)', () => {
  it('is read back while status still says Recovering, and finished', async () => {
    const record: RecoveryRecord = { name: 'kv-recovery', uid: 'cm-1', createdAtMs: NOW - 30_000, pod: 'kv-0', memberId: 'id0', id: 'r1', sourcePodUid: 'pod-0-old' };
    const whole = statusOf([member(0, { id: 'new0' }), member(1, { id: 'new1' }), member(2, { id: 'new2' })]);
    const recovering = { ...cr, status: { conditions: [{ type: 'Healing', status: 'True', reason: 'Recovering', message: '…' }] } } as unknown as CachedObject;
    const decision = (await membershipStep(reader(whole, statefulSet(3), [], undefined, record), recovering, resource(3), false))!;
    expect(decision.write).toMatchObject({ kind: 'recovery', action: { type: 'finish', record: { name: 'kv-recovery', uid: 'cm-1' } } });
    expect(decision.result.healing).toMatchObject({ status: 'False', reason: 'Recovered' });
    expect(decision.result.recoveryEvent).toMatchObject({ type: 'Normal', reason: 'Recovered', message: expect.stringMatching(/^recovered from kv-0 \(member id0\): 3 of 3 voting members healthy.*30 s after the decision/) });
    // Without that status, no request and no record: nothing is read, nothing happens.
    const plain = (await membershipStep(reader(whole, statefulSet(3), [], undefined, record), cr, resource(3), false))!;
    expect(plain.write).toBeUndefined();
  });
});
