/**
 * Member replacement, one step per reconcile, from what the world shows:
 * each signal that leads to a replacement, each that only waits, each gate,
 * and every state a controller killed between two steps leaves behind.
 */
import { decideReplacementStep, replacementSignal, type HealingClaim, type HealingPod, type ReplacementInput } from '../../engines/etcd/replacement.js';
import type { MemberStatus, MembershipStatus } from '../../engines/membership.js';

const NOW = 1_800_000_000_000;
const pod = (i: number) => `kv-${i}`;
const peerUrl = (p: string) => `http://${p}.kv-peers:2380`;

function member(i: number, over: Partial<MemberStatus> = {}): MemberStatus {
  return { id: `m${i}`, name: pod(i), peerUrls: [peerUrl(pod(i))], learner: false, healthy: true, leader: i === 0, alarms: [], ...over };
}

function membership(members: MemberStatus[], alarms: MembershipStatus['alarms'] = []): MembershipStatus {
  const voters = members.filter((m) => !m.learner);
  return { members, voters: voters.length, healthyVoters: voters.filter((m) => m.healthy).length, leaderId: members.find((m) => m.leader)?.id, alarms };
}

const podOf = (i: number, over: Partial<HealingPod> = {}): HealingPod => ({ name: pod(i), uid: `pod-uid-${i}`, deleting: false, createdAtMs: NOW - 3_600_000, ...over });
const claimOf = (i: number, over: Partial<HealingClaim> = {}): HealingClaim => ({ name: `data-${pod(i)}`, uid: `claim-uid-${i}`, deleting: false, phase: 'Bound', ...over });

/** A cluster of `n` whose pods and claims all exist; `over` replaces some. */
function input(n: number, members: MemberStatus[], over: Partial<Omit<ReplacementInput, 'pods' | 'claims'>> & { pods?: Record<number, HealingPod | undefined>; claims?: Record<number, HealingClaim | undefined> } = {}): ReplacementInput {
  const pods = new Map<string, HealingPod>();
  const claims = new Map<string, HealingClaim>();
  for (let i = 0; i < n; i++) {
    const p = over.pods && i in over.pods ? over.pods[i] : podOf(i);
    const c = over.claims && i in over.claims ? over.claims[i] : claimOf(i);
    if (p) pods.set(pod(i), p);
    if (c) claims.set(pod(i), c);
  }
  const { pods: _p, claims: _c, ...rest } = over;
  return {
    size: n, replicas: n, membership: membership(members), pod, peerUrl, pods, claims,
    unhealthySince: new Map(), now: NOW, unhealthyAfterMs: 600_000, learnerCatchUpMs: 300_000, ...rest,
  };
}

const five = (over: Record<number, Partial<MemberStatus>> = {}) => [0, 1, 2, 3, 4].map((i) => member(i, over[i]));
const since = (entries: Record<string, number>) => new Map(Object.entries(entries));

describe('what leads to a replacement', () => {
  const bounds = { unhealthySince: new Map<string, number>(), now: NOW, unhealthyAfterMs: 600_000 };

  const hashes = (byOrdinal: Record<number, number>, voters = 5) => ({
    revision: 120, voters, byMember: new Map(Object.entries(byOrdinal).map(([i, hash]) => [`m${i}`, { hash, compactRevision: 7 }])),
  });

  it('a CORRUPT alarm, even on a member that answers, when a majority of the voters agree on a hash and its own differs', () => {
    const signal = replacementSignal(member(1, { alarms: ['CORRUPT'] }), podOf(1), claimOf(1), { ...bounds, corruptionHashes: hashes({ 0: 11, 1: 99, 2: 11, 3: 11, 4: 11 }) });
    expect(signal).toMatchObject({ replace: true, reason: 'a CORRUPT alarm, and its hash at revision 120 differs from the one 4 of 5 voting members agree on' });
  });


  it('a claim being deleted or Lost, even while the member still serves from the mounted volume', () => {
    expect(replacementSignal(member(1), podOf(1), claimOf(1, { deleting: true }), bounds)).toMatchObject({ replace: true, reason: expect.stringMatching(/data-kv-1 is being deleted/) });
    expect(replacementSignal(member(1), podOf(1), claimOf(1, { phase: 'Lost' }), bounds)).toMatchObject({ replace: true, reason: expect.stringMatching(/Lost/) });
  });

  it('a pod the scheduler cannot place because no node reaches its volume (its node is gone)', () => {
    for (const message of [
      '0/3 nodes are available: 3 node(s) had volume node affinity conflict.',
      // Kubernetes 1.36's scheduler, as the integration test's node removal shows it.
      '0/2 nodes are available: 2 node(s) didn\'t match PersistentVolume\'s node affinity. no new claims to deallocate, preemption: 0/2 nodes are available: 2 Preemption is not helpful for scheduling.',
    ]) {
      const stuck = podOf(1, { unschedulable: message });
      expect(replacementSignal(member(1, { healthy: false }), stuck, claimOf(1), bounds)).toMatchObject({ replace: true, reason: expect.stringMatching(/no node can reach its volume/) });
    }
  });

  it('not a pod the scheduler cannot place because its volume\'s node is only cordoned or full (issue 40, defect 3): that waits', () => {
    for (const message of [
      // kubectl drain for a kernel upgrade: the volume's node is there, only unschedulable.
      '0/6 nodes are available: 1 node(s) were unschedulable, 5 node(s) had volume node affinity conflict. preemption: 0/6 nodes are available: 6 Preemption is not helpful for scheduling.',
      '0/3 nodes are available: 1 Insufficient memory, 2 node(s) didn\'t match PersistentVolume\'s node affinity.',
      '0/3 nodes are available: 1 node(s) had untolerated taint {node.kubernetes.io/unreachable: }, 2 node(s) had volume node affinity conflict.',
    ]) {
      const stuck = podOf(1, { unschedulable: message });
      const s = replacementSignal(member(1, { healthy: false }), stuck, claimOf(1), { ...bounds, unhealthySince: since({ m1: NOW - 5_000 }) });
      expect(s).toMatchObject({ replace: false, waiting: expect.stringMatching(/unhealthy since 2027-01-15T07:59:55Z/) });
    }
  });

  it('an exit etcd makes only on lost data, read from the pod\'s last termination message, without waiting for the timeout', () => {
    for (const log of [
      'panic: tocommit(57) is out of range [lastIndex(0)]. Was the raft log corrupted, truncated, or lost?',
      '{"level":"fatal","msg":"discovery failed","error":"member 8e9e05c52164694d has already been bootstrapped"}',
    ]) {
      const crashing = podOf(1, { lastTermination: log, lastTerminationAtMs: NOW - 30_000, running: false });
      expect(replacementSignal(member(1, { healthy: false }), crashing, claimOf(1), bounds)).toMatchObject({ replace: true });
    }
  });

  it('on a real kubelet: the panic line read from the exited container\'s log, when the termination message holds only the stack trace after it', () => {
    const stack = 'goroutine 155 [running]:\ngo.etcd.io/raft/v3.(*raft).Step(0xc000470000, {0x5, 0x5})\n\tgo.etcd.io/raft/v3@v3.6.0/raft.go:1257 +0x1ba';
    const tail = '{"level":"panic","msg":"tocommit(1042) is out of range [lastIndex(0)]. Was the raft log corrupted, truncated, or lost?"}';
    const crashing = podOf(1, { lastTermination: stack, lastLogTail: tail, lastTerminationAtMs: NOW - 30_000, running: false });
    expect(replacementSignal(member(1, { healthy: false }), crashing, claimOf(1), bounds)).toEqual({ replace: true, reason: 'etcd exited on data it cannot use (tocommit(1042) is out of range)' });
    // Only an exit that is the member's state now: the same log of a container that runs again waits.
    expect(replacementSignal(member(1, { healthy: false }), { ...crashing, running: true }, claimOf(1), { ...bounds, unhealthySince: since({ m1: NOW - 5_000 }) })).toMatchObject({ replace: false });
  });

  it('not an old exit message (issue 40): a container that runs now, or an exit long ago, waits as any other ill health', () => {
    const log = 'member count is unequal'; // a learner's first start, kept in lastState for as long as the container does not exit again
    const runningNow = podOf(1, { lastTermination: log, lastTerminationAtMs: NOW - 30_000, running: true });
    const longAgo = podOf(1, { lastTermination: log, lastTerminationAtMs: NOW - 3 * 3_600_000, running: false });
    for (const pod of [runningNow, longAgo, podOf(1, { lastTermination: log })]) {
      expect(replacementSignal(member(1, { healthy: false }), pod, claimOf(1), { ...bounds, unhealthySince: since({ m1: NOW - 5_000 }) })).toMatchObject({ replace: false });
    }
  });

  it('any other ill health that lasts longer than the configured time (a wiped data directory on a pod that reports no message)', () => {
    const s = replacementSignal(member(1, { healthy: false, problem: 'connection refused' }), podOf(1), claimOf(1), { ...bounds, unhealthySince: since({ m1: NOW - 600_000 }) });
    expect(s).toMatchObject({ replace: true, reason: 'unhealthy for 600 s (connection refused), longer than 600 s' });
  });
});

describe('what only waits', () => {
  const bounds = { unhealthySince: since({ m1: NOW - 30_000 }), now: NOW, unhealthyAfterMs: 600_000 };

  it('a healthy member with a bound claim: nothing to say', () => {
    expect(replacementSignal(member(1), podOf(1), claimOf(1), bounds)).toBeUndefined();
  });

  it('a restart, a short network loss, a GC pause: unhealthy for less than the configured time, whatever the problem', () => {
    for (const problem of ['connection refused', 'context deadline exceeded', 'no leader']) {
      expect(replacementSignal(member(1, { healthy: false, problem }), podOf(1), claimOf(1), bounds)).toEqual({
        replace: false, waiting: `kv-1 unhealthy since 2027-01-15T07:59:30Z (${problem}); replaced at 2027-01-15T08:09:30Z (after 600 s) unless it recovers`, dueInMs: 570_000,
      });
    }
  });

  it('an exit etcd makes for other reasons (a bad flag, a port taken) waits for the timeout too', () => {
    expect(replacementSignal(member(1, { healthy: false }), podOf(1, { lastTermination: 'listen tcp :2380: bind: address already in use' }), claimOf(1), bounds)).toMatchObject({ replace: false });
  });

  it('a member first seen unhealthy now starts its clock now', () => {
    expect(replacementSignal(member(2, { healthy: false }), podOf(2), claimOf(2), bounds)).toMatchObject({ replace: false, dueInMs: 600_000 });
  });

  it('a pod that is unschedulable for another reason (no room on any node)', () => {
    const pending = podOf(1, { unschedulable: '0/3 nodes are available: 3 Insufficient memory.' });
    expect(replacementSignal(member(1, { healthy: false }), pending, claimOf(1), bounds)).toMatchObject({ replace: false });
  });
});

describe('starting a replacement, and its gates', () => {
  const wiped = { unhealthySince: since({ m2: NOW - 700_000 }) };

  it('marks the member\'s claim with its id: the decision is written where the next reconcile reads it', () => {
    const s = decideReplacementStep(input(5, five({ 2: { healthy: false } }), wiped));
    expect(s).toMatchObject({ phase: 'Replacing', pod: 'kv-2', action: { type: 'mark', pod: 'kv-2', claim: { name: 'data-kv-2', uid: 'claim-uid-2' }, memberId: 'm2' } });
  });

  it('nothing to heal: no step (the scaling step decides)', () => {
    expect(decideReplacementStep(input(5, five()))).toBeUndefined();
  });

  it('a member unhealthy for a short while: waits, and looks again when it would be due', () => {
    const s = decideReplacementStep(input(5, five({ 2: { healthy: false } }), { unhealthySince: since({ m2: NOW - 598_000 }) }));
    expect(s).toMatchObject({ phase: 'Waiting', requeueAfterMs: 2_000 });
    expect(s!.action).toBeUndefined();
  });

  it('two members failing at once: only one is marked, the lower ordinal', () => {
    const s = decideReplacementStep(input(5, five({ 1: { healthy: false }, 3: { healthy: false } }), { unhealthySince: since({ m1: NOW - 700_000, m3: NOW - 700_000 }) }));
    expect(s).toMatchObject({ action: { type: 'mark', pod: 'kv-1' } });
  });

  it('never a second replacement while one is under way (a marked claim), even when another member is due', () => {
    const s = decideReplacementStep(input(5, five({ 1: { healthy: false }, 3: { healthy: false } }), {
      unhealthySince: since({ m1: NOW - 700_000, m3: NOW - 700_000 }), claims: { 3: claimOf(3, { replacing: 'm3' }) },
    }));
    expect(s).toMatchObject({ action: { type: 'remove', id: 'm3', pod: 'kv-3' } });
  });

  it('not when the others would not hold a quorum without it', () => {
    // 3 members, one down and one due: removing the due one leaves 1 of 2.
    const members = [member(0), member(1, { healthy: false }), member(2, { healthy: false })];
    const s = decideReplacementStep(input(3, members, { unhealthySince: since({ m1: NOW - 60_000, m2: NOW - 700_000 }) }));
    expect(s).toMatchObject({ phase: 'Waiting', message: expect.stringMatching(/kv-2 is to be replaced .* waits: the others would not hold a quorum without it \(1 of 2 healthy\)/) });
    expect(s!.action).toBeUndefined();
  });

  it('a member with a CORRUPT alarm in a cluster of 3 with the other two healthy, and agreeing on a hash its own differs from, is replaced', () => {
    const members = [member(0), member(1, { alarms: ['CORRUPT'] }), member(2)];
    const corruptionHashes = { revision: 50, voters: 3, byMember: new Map([['m0', { hash: 1, compactRevision: 0 }], ['m1', { hash: 2, compactRevision: 0 }], ['m2', { hash: 1, compactRevision: 0 }]]) };
    expect(decideReplacementStep(input(3, members, { corruptionHashes }))).toMatchObject({ action: { type: 'mark', pod: 'kv-1', memberId: 'm1' } });
  });

  it('not during another change: an upgrade, a storage step, a defragmentation', () => {
    const s = decideReplacementStep(input(5, five({ 2: { healthy: false } }), { ...wiped, otherChange: 'a rolling upgrade is under way' }));
    expect(s).toMatchObject({ phase: 'Waiting', message: expect.stringMatching(/waits: a rolling upgrade is under way/) });
    expect(s!.action).toBeUndefined();
  });

  it('not during scaling: the StatefulSet, the spec and the voters disagree', () => {
    expect(decideReplacementStep(input(5, five({ 2: { healthy: false } }), { ...wiped, size: 7 }))?.action).toBeUndefined();
    expect(decideReplacementStep(input(5, five({ 2: { healthy: false } }), { ...wiped, replicas: 6 }))?.action).toBeUndefined();
  });

  it('not while a learner is being added (the scaling step promotes it)', () => {
    const members = [...five({ 2: { healthy: false } }), member(5, { learner: true, id: 'm5', leader: false })];
    expect(decideReplacementStep(input(6, members, { ...wiped, size: 6, replicas: 6, pods: { 5: podOf(5, { createdAtMs: NOW - 10_000 }) } }))).toBeUndefined();
  });

  it('waits when the claim to mark does not exist', () => {
    const s = decideReplacementStep(input(5, five({ 2: { healthy: false } }), { ...wiped, claims: { 2: undefined } }));
    expect(s).toMatchObject({ phase: 'Waiting', message: expect.stringMatching(/its claim does not exist/) });
  });
});

describe('resuming a replacement from the world, whatever step a controller was killed after', () => {
  const marked = { claims: { 2: claimOf(2, { replacing: 'm2' }) } };

  it('marked, still a member: removes it', () => {
    expect(decideReplacementStep(input(5, five({ 2: { healthy: false } }), marked))).toMatchObject({ action: { type: 'remove', id: 'm2', pod: 'kv-2' } });
  });

  it('marked, still a member, but the others lost their majority meanwhile: waits', () => {
    const s = decideReplacementStep(input(5, five({ 1: { healthy: false }, 2: { healthy: false }, 3: { healthy: false } }), marked));
    expect(s).toMatchObject({ phase: 'Replacing' });
    expect(s!.action).toBeUndefined();
  });

  const learner2 = member(2, { id: 'm9', learner: true, leader: false, healthy: false, name: '' });
  const fourAndLearner = [...five().filter((m) => m.id !== 'm2'), learner2];

  it('marked and removed: adds the pod back as a learner at its peer URL before its volume is emptied, never removes anyone again', () => {
    const four = five().filter((m) => m.id !== 'm2');
    expect(decideReplacementStep(input(5, four, marked))).toMatchObject({ action: { type: 'addLearner', pod: 'kv-2', peerUrl: 'http://kv-2.kv-peers:2380' } });
  });

  it('marked and removed while another voter is down and due: marks that one too, as etcd adds no member while a voter is down', () => {
    const four = five().filter((m) => m.id !== 'm2').map((m) => (m.id === 'm4' ? { ...m, healthy: false } : m));
    const s = decideReplacementStep(input(5, four, { ...marked, unhealthySince: since({ m4: NOW - 700_000 }) }));
    expect(s).toMatchObject({ action: { type: 'mark', pod: 'kv-4', memberId: 'm4' }, message: expect.stringMatching(/kv-2 cannot be added back while it is a voting member that is down/) });
    // Both marked: the still-listed one is removed next; then one learner at a time.
    const both = { claims: { 2: claimOf(2, { replacing: 'm2' }), 4: claimOf(4, { replacing: 'm4' }) }, unhealthySince: since({ m4: NOW - 700_000 }) };
    expect(decideReplacementStep(input(5, four, both))).toMatchObject({ action: { type: 'remove', id: 'm4', pod: 'kv-4' } });
    const three = four.filter((m) => m.id !== 'm4');
    expect(decideReplacementStep(input(5, three, both))).toMatchObject({ action: { type: 'addLearner', pod: 'kv-2' } });
    const learner = member(2, { id: 'm9', learner: true, leader: false, healthy: false, name: '' });
    expect(decideReplacementStep(input(5, [...three, learner], both))).toMatchObject({ action: { type: 'deleteVolume', pod: 'kv-2' } });
    // kv-2's claim went; kv-4's is still marked: kv-2's learner is promoted here once it runs, then kv-4 is added back.
    const kv4Only = { claims: { 4: claimOf(4, { replacing: 'm4' }) } };
    expect(decideReplacementStep(input(5, [...three, learner], kv4Only))).toMatchObject({ phase: 'Replacing', message: expect.stringMatching(/waiting for the other learner/) });
    const running = member(2, { id: 'm9', learner: true, leader: false });
    expect(decideReplacementStep(input(5, [...three, running], kv4Only))).toMatchObject({ action: { type: 'promote', id: 'm9', pod: 'kv-2' } });
    expect(decideReplacementStep(input(5, [...three, { ...running, learner: false }], kv4Only))).toMatchObject({ action: { type: 'addLearner', pod: 'kv-4' } });
  });

  it('tells a member added back while another pod has no member exactly the pods the membership lists (etcd refuses a joining member whose list counts more)', () => {
    const both = { claims: { 2: claimOf(2, { replacing: 'm2' }), 4: claimOf(4, { replacing: 'm4' }) } };
    const three = five().filter((m) => m.id !== 'm2' && m.id !== 'm4');
    expect(decideReplacementStep(input(5, three, both))).toMatchObject({ action: { type: 'addLearner', pod: 'kv-2' }, joinablePods: ['kv-0', 'kv-1', 'kv-2', 'kv-3'] });
    const learner = member(2, { id: 'm9', learner: true, leader: false, healthy: false, name: '' });
    expect(decideReplacementStep(input(5, [...three, learner], both))).toMatchObject({ action: { type: 'deleteVolume', pod: 'kv-2' }, joinablePods: ['kv-0', 'kv-1', 'kv-2', 'kv-3'] });
    const kv4Only = { claims: { 4: claimOf(4, { replacing: 'm4' }) } };
    expect(decideReplacementStep(input(5, [...three, { ...learner, name: 'kv-2', healthy: true }], kv4Only))).toMatchObject({ action: { type: 'promote' }, joinablePods: ['kv-0', 'kv-1', 'kv-2', 'kv-3'] });
    // kv-4 added back: every pod has a member again, the plain list.
    const added = decideReplacementStep(input(5, [...three, member(2, { id: 'm9', leader: false })], kv4Only));
    expect(added).toMatchObject({ action: { type: 'addLearner', pod: 'kv-4' } });
    expect(added!.joinablePods).toBeUndefined();
  });

  it('a single replacement keeps the plain list throughout (every pod has a member whenever one joins)', () => {
    const four = five().filter((m) => m.id !== 'm2');
    expect(decideReplacementStep(input(5, four, marked))!.joinablePods).toBeUndefined();
    expect(decideReplacementStep(input(5, fourAndLearner, marked))!.joinablePods).toBeUndefined();
  });

  it('marked and removed while another voter is down but not due: the add waits for it, nothing else is removed', () => {
    const four = five().filter((m) => m.id !== 'm2').map((m) => (m.id === 'm4' ? { ...m, healthy: false } : m));
    const s = decideReplacementStep(input(5, four, { ...marked, unhealthySince: since({ m4: NOW - 5_000 }) }));
    expect(s).toMatchObject({ phase: 'Replacing', message: expect.stringMatching(/adding it back waits, etcd adds a member only while every voting member is connected; down: kv-4/) });
    expect(s!.action).toBeUndefined();
  });

  it('marked and removed while another learner is being added: waits for it to run, promotes it, and only then adds this one', () => {
    const starting = [...five().filter((m) => m.id !== 'm2' && m.id !== 'm4'), member(4, { learner: true, healthy: false })];
    const s = decideReplacementStep(input(5, starting, marked));
    expect(s).toMatchObject({ phase: 'Replacing' });
    expect(s!.action).toBeUndefined();
    const running = [...five().filter((m) => m.id !== 'm2' && m.id !== 'm4'), member(4, { learner: true })];
    expect(decideReplacementStep(input(5, running, marked))).toMatchObject({ action: { type: 'promote', id: 'm4', pod: 'kv-4' } });
  });

  it('marked and removed while a learner the controller did not add is there: removes that learner, never promotes it', () => {
    const intruder = member(4, { id: 'm666', learner: true, peerUrls: ['http://10.9.9.9:2380'] });
    const members = [...five().filter((m) => m.id !== 'm2' && m.id !== 'm4'), intruder];
    const s = decideReplacementStep(input(5, members, marked));
    expect(s).toMatchObject({ action: { type: 'remove', id: 'm666', pod: 'kv-4' }, phase: 'Replacing' });
    expect(s!.message).toMatch(/first removing learner kv-4 \(member m666, peer URLs http:\/\/10\.9\.9\.9:2380\), which advertises no pod of this cluster/);
  });

  it('marked, removed and added back: deletes the claim and the pod (by uid)', () => {
    const s = decideReplacementStep(input(5, fourAndLearner, marked));
    expect(s).toMatchObject({ action: { type: 'deleteVolume', pod: 'kv-2', claim: { name: 'data-kv-2', uid: 'claim-uid-2' }, podUid: 'pod-uid-2' } });
  });

  it('removed, the claim already being deleted (held by its pod): deletes the pod only', () => {
    const s = decideReplacementStep(input(5, fourAndLearner, { claims: { 2: claimOf(2, { replacing: 'm2', deleting: true }) } }));
    expect(s).toMatchObject({ action: { type: 'deleteVolume', pod: 'kv-2', podUid: 'pod-uid-2' } });
    expect((s!.action as { claim?: unknown }).claim).toBeUndefined();
  });

  it('removed, claim and pod going: waits for them', () => {
    const s = decideReplacementStep(input(5, fourAndLearner, { claims: { 2: claimOf(2, { replacing: 'm2', deleting: true }) }, pods: { 2: podOf(2, { deleting: true }) } }));
    expect(s).toMatchObject({ phase: 'Replacing', message: expect.stringMatching(/waiting for its old pod and claim to go/) });
    expect(s!.action).toBeUndefined();
  });

  it('one member short with no marked claim (a member removed by hand): adds the pod back as a learner at its peer URL', () => {
    const four = five().filter((m) => m.id !== 'm2');
    const s = decideReplacementStep(input(5, four, { claims: { 2: claimOf(2, { uid: 'new-claim' }) } }));
    expect(s).toMatchObject({ action: { type: 'addLearner', pod: 'kv-2', peerUrl: 'http://kv-2.kv-peers:2380' } });
  });

  it('one member short, the new claim not created yet: waits', () => {
    const four = five().filter((m) => m.id !== 'm2');
    expect(decideReplacementStep(input(5, four, { claims: { 2: undefined }, pods: { 2: undefined } }))).toMatchObject({ phase: 'Replacing' });
  });

  it('a half-done scale-in (spec lowered, replicas not yet) is the scaling step\'s, not an add', () => {
    const four = five().filter((m) => m.id !== 'm4');
    expect(decideReplacementStep(input(5, four, { size: 4 }))).toBeUndefined();
  });

  it('a learner that catches up in time is left to the scaling step; one that does not is replaced again', () => {
    const learner = member(2, { id: 'm9', learner: true, leader: false });
    const members = [...five().filter((m) => m.id !== 'm2'), learner];
    expect(decideReplacementStep(input(5, members, { pods: { 2: podOf(2, { createdAtMs: NOW - 60_000 }) } }))).toBeUndefined();
    expect(decideReplacementStep(input(5, members, { pods: { 2: podOf(2, { createdAtMs: NOW - 400_000 }) } }))).toMatchObject({ action: { type: 'mark', pod: 'kv-2', memberId: 'm9' } });
  });

  it('a learner that never started (no name) is found by its peer URL', () => {
    const learner = { ...member(2, { id: 'm9', learner: true, leader: false }), name: '' };
    const members = [...five().filter((m) => m.id !== 'm2'), learner];
    expect(decideReplacementStep(input(5, members, { pods: { 2: podOf(2, { createdAtMs: NOW - 400_000 }) } }))).toMatchObject({ action: { type: 'mark', pod: 'kv-2', memberId: 'm9' } });
  });

  it('disarms the CORRUPT alarm a replaced member left behind, and only one of a member no longer listed', () => {
    const four = five().filter((m) => m.id !== 'm2');
    const withAlarm = { ...input(5, five()), membership: membership(five(), [{ memberId: 'm2', alarm: 'CORRUPT' }]) };
    expect(decideReplacementStep(withAlarm)?.action?.type).not.toBe('disarm');
    const s = decideReplacementStep({ ...input(5, four), membership: membership(four, [{ memberId: 'm2', alarm: 'CORRUPT' }]) });
    expect(s).toMatchObject({ action: { type: 'disarm', memberId: 'm2' } });
  });
});

describe('a CORRUPT alarm the members\' own hashes do not pin on the member (issue 40, defect 4): kept, and held for a human', () => {
  const bounds = { unhealthySince: new Map<string, number>(), now: NOW, unhealthyAfterMs: 600_000 };
  const hashes = (byOrdinal: Record<number, number>, voters = 5) => ({
    revision: 120, voters, byMember: new Map(Object.entries(byOrdinal).map(([i, hash]) => [`m${i}`, { hash, compactRevision: 7 }])),
  });
  const alarmed = member(1, { alarms: ['CORRUPT'] });

  it('when the leader that raised it is the corrupt one: the alarmed follower holds the majority\'s hash', () => {
    // Before the fix: replaced at once, re-seeded from the corrupt leader's data, check after check.
    const signal = replacementSignal(alarmed, podOf(1), claimOf(1), { ...bounds, corruptionHashes: hashes({ 0: 66, 1: 11, 2: 11, 3: 11, 4: 11 }) });
    expect(signal).toMatchObject({ replace: false, corruption: true, waiting: expect.stringMatching(/is kept and not acted on: its hash at revision 120 is the majority's/) });
  });

  it('when no majority agrees, when the member does not answer HashKV, or when the hashes could not be read', () => {
    expect(replacementSignal(alarmed, podOf(1), claimOf(1), { ...bounds, corruptionHashes: hashes({ 0: 1, 1: 2, 2: 3, 3: 1, 4: 2 }) })).toMatchObject({ replace: false, waiting: expect.stringMatching(/no majority agrees/) });
    // Two of five agree and the member differs: two is not a majority of five.
    expect(replacementSignal(alarmed, podOf(1), claimOf(1), { ...bounds, corruptionHashes: hashes({ 0: 5, 1: 9, 2: 5 }) })).toMatchObject({ replace: false, waiting: expect.stringMatching(/2 of 5 voting members agree/) });
    expect(replacementSignal(alarmed, podOf(1), claimOf(1), { ...bounds, corruptionHashes: hashes({ 0: 5, 2: 5, 3: 5, 4: 5 }) })).toMatchObject({ replace: false, waiting: expect.stringMatching(/did not answer HashKV/) });
    expect(replacementSignal(alarmed, podOf(1), claimOf(1), bounds)).toMatchObject({ replace: false, waiting: expect.stringMatching(/hashes could not be read/) });
  });

  it('compares hashes only over the same compaction', () => {
    const split = { revision: 120, voters: 3, byMember: new Map([['m0', { hash: 5, compactRevision: 7 }], ['m1', { hash: 5, compactRevision: 9 }], ['m2', { hash: 5, compactRevision: 7 }]]) };
    expect(replacementSignal(alarmed, podOf(1), claimOf(1), { ...bounds, corruptionHashes: split })).toMatchObject({ replace: true });
  });

  it('still replaces on a signal that does not rest on the alarm (its claim Lost)', () => {
    expect(replacementSignal(alarmed, podOf(1), claimOf(1, { phase: 'Lost' }), bounds)).toMatchObject({ replace: true, reason: expect.stringMatching(/Lost/) });
  });

  it('reports the hold as a Waiting step that says so, looked at again in a minute', () => {
    const step = decideReplacementStep(input(5, five({ 1: { alarms: ['CORRUPT'] } }), { corruptionHashes: hashes({ 0: 66, 1: 11, 2: 11, 3: 11, 4: 11 }) }));
    expect(step).toMatchObject({ phase: 'Waiting', corruptionHeld: true, requeueAfterMs: 60_000, message: expect.stringMatching(/a human decides/) });
    expect(step!.action).toBeUndefined();
  });
});
