/**
 * The safety invariants of docs/invariants.md, checked against every pure
 * Day-2 decision function over thousands of random states per run (fast-check,
 * with shrinking; the seed is printed and DKV_PROPERTY_SEED replays it). The
 * states the scenarios never thought of are where the defects of issue 40
 * lived: each of those is also kept below as a fixed example.
 */
import fc from 'fast-check';
import { decideScalingStep } from '../../engines/etcd/scaling.js';
import { decideRecovery, QUORUM_LOSS_LOOKS, type QuorumLossSeen } from '../../engines/etcd/recovery.js';
import { decideRebuildStep, type RecoveryRecord } from '../../engines/etcd/rebuild.js';
import { dataLossIn, RECENT_EXIT_MS, replacementSignal, volumeNodeGone, type HealingClaim, type HealingPod } from '../../engines/etcd/replacement.js';
import { unhealthyClocks, type RecordedMember } from '../../reconciler/day2/unhealthy-memory.js';
import { decideDefragmentationStep, recoveryTarget } from '../../engines/etcd/defragmentation.js';
import { decideUpgradeStep, type MemberPod } from '../../engines/etcd/upgrade.js';
import { gateSwitchingRestart, templateTls } from '../../engines/etcd/tls-migration.js';
import { hasQuorum, notReady, type MembershipStatus } from '../../engines/membership.js';
import { membershipArb, ordinalOf, pod, propertySeed, quorumVisible, RUNS, unschedulableArb } from '../support/day2-arbitraries.js';

const seed = propertySeed('day2-invariants.test.ts');
const check = <T>(property: fc.IProperty<T>, examples: T[] = []) => fc.assert(property, { seed, numRuns: RUNS, examples });
const NOW = 1_800_000_000_000;
const voters = (m: MembershipStatus) => m.members.filter((x) => !x.learner);

describe('scaling (decideScalingStep)', () => {
  const scalingArb = fc.record({ membership: membershipArb, size: fc.integer({ min: 1, max: 9 }), replicas: fc.integer({ min: 0, max: 9 }), podsSettled: fc.boolean() });
  const decide = (s: { membership: MembershipStatus; size: number; replicas: number; podsSettled: boolean }) => decideScalingStep({ ...s, pod, recorded: { replicas: s.replicas, state: 'existing' } });
  // Defect 2: voters at ordinals 0, 3 and 4.
  const gapped: MembershipStatus = { members: [0, 3, 4].map((i) => ({ id: `m${i}`, name: pod(i), peerUrls: [], learner: false, healthy: true, leader: i === 0, alarms: [] })), voters: 3, healthyVoters: 3, alarms: [] };

  it('never lowers replicas below a member\'s ordinal, whether its action succeeds or fails', () => check(fc.property(scalingArb, (s) => {
    const step = decide(s);
    const removed = step.action?.type === 'remove' ? step.action.id : undefined;
    const highest = (ignore?: string) => Math.max(0, ...s.membership.members.filter((m) => m.name && m.id !== ignore).map((m) => ordinalOf(m.name) + 1));
    return step.plan.replicas >= highest(removed) && step.planIfActionFails.replicas >= highest();
  }), [[{ membership: gapped, size: 3, replicas: 5, podsSettled: true }]]));

  it('changes the membership only with a quorum, every voter healthy and caught up, and no learner left half-added', () => check(fc.property(scalingArb, (s) => {
    const { action } = decide(s);
    if (!action || action.type === 'promote') return action?.type !== 'promote' || hasQuorum(s.membership);
    return hasQuorum(s.membership) && notReady(s.membership) === undefined && !s.membership.members.some((m) => m.learner);
  })));

  it('removes a voter only when the voters left keep a healthy majority, and never the leader', () => check(fc.property(scalingArb, (s) => {
    const { action } = decide(s);
    if (action?.type !== 'remove') return true;
    const left = voters(s.membership).filter((m) => m.id !== action.id);
    const leader = s.membership.members.find((m) => m.id === action.id)?.leader;
    return !leader && left.filter((m) => m.healthy).length > left.length / 2;
  })));

  it('adds a learner only at an ordinal no member holds', () => check(fc.property(scalingArb, (s) => {
    const { action } = decide(s);
    return action?.type !== 'addLearner' || !s.membership.members.some((m) => m.name === action.pod);
  })));
});

describe('members the controller did not add (decideScalingStep with the pods\' peer URLs)', () => {
  const podPeerUrl = (p: string) => `http://${p}.kv-peers:2380`;
  // Some members made strangers: a learner (or a voter) added by someone who reached a client port, advertising
  // another address (named kv-8 once started: an ordinal to make room for), or one of the pods' addresses under another pod's name.
  const strangerArb = fc.record({
    membership: membershipArb, size: fc.integer({ min: 1, max: 9 }), replicas: fc.integer({ min: 0, max: 9 }), podsSettled: fc.boolean(),
    strangers: fc.uniqueArray(fc.nat({ max: 8 }), { maxLength: 2 }), how: fc.constantFrom('address', 'name'),
  }).map(({ membership, strangers, how, ...rest }) => {
    const members = membership.members.map((m, i) => (!strangers.includes(i) ? m
      : how === 'address' ? { ...m, id: `stranger-${i}`, peerUrls: ['http://intruder.example:2380'], name: m.name ? 'kv-8' : '' }
        : { ...m, id: `stranger-${i}`, name: pod((ordinalOf(m.peerUrls[0].slice(7, m.peerUrls[0].indexOf('.'))) + 1) % 9) }));
    return { ...rest, membership: { ...membership, members } };
  });
  const own = (m: { id: string }) => !m.id.startsWith('stranger-');

  it('never promotes a member that advertises no pod of its own name, removes only such a learner while one is there, and never makes room for a stranger\'s name', () => check(fc.property(strangerArb, (s) => {
    const step = decideScalingStep({ ...s, pod, recorded: { replicas: s.replicas, state: 'existing' }, peerUrl: podPeerUrl });
    const target = s.membership.members.find((m) => step.action && 'id' in step.action && m.id === step.action.id);
    if (step.action?.type === 'promote' && !own(target!)) return false;
    const strangers = s.membership.members.filter((m) => !own(m));
    if (strangers.length > 0 && step.action !== undefined && !(step.action.type === 'remove' && target && !own(target) && target.learner)) return false;
    const ownFloor = Math.max(0, ...s.membership.members.filter((m) => own(m) && m.name).map((m) => ordinalOf(m.name) + 1));
    // kv-8 is a stranger's: replicas is raised for no stranger (the own members' floor and what the step itself decides without them).
    return strangers.length === 0 || step.plan.replicas === Math.max(s.replicas, ownFloor);
  })));
});

describe('quorum-loss recovery (decideRecovery, decideRebuildStep)', () => {
  const seenArb: fc.Arbitrary<QuorumLossSeen> = fc.record({ forMs: fc.integer({ min: 0, max: 300_000 }), looks: fc.integer({ min: 0, max: 10 }), requiredMs: fc.constantFrom(60_000, 5_000) });
  const requestArb = fc.constantFrom('auto', 'kv-0', 'kv-1', 'kv-2', 'kv-4', 'kv-8');
  // Defect 1: kv-0 answers without a leader, the others do not, but the member list answered a linearizable read.
  const listedByQuorum: MembershipStatus = {
    members: [{ id: 'm0', name: 'kv-0', peerUrls: [], learner: false, healthy: false, leader: false, problem: 'no leader', raftTerm: 4, raftIndex: 90, revision: 80, alarms: [] },
      ...[1, 2].map((i) => ({ id: `m${i}`, name: pod(i), peerUrls: [], learner: false, healthy: false, leader: false, problem: 'context deadline exceeded', alarms: [] }))],
    voters: 3, healthyVoters: 0, alarms: [], listedLinearizably: true,
  };

  it('never chooses a source while the members show a quorum, or before the loss was seen long enough on enough looks', () => check(fc.property(requestArb, membershipArb, seenArb, (request, membership, seen) => {
    const decision = decideRecovery(request, membership, seen);
    if (decision?.kind !== 'chosen') return true;
    return !quorumVisible(membership) && seen.forMs >= seen.requiredMs && seen.looks >= QUORUM_LOSS_LOOKS;
  }), [['auto', listedByQuorum, { forMs: 600_000, looks: 10, requiredMs: 60_000 }]]));

  it('chooses a voting member that answered, with no answering voter ahead of it in applied data', () => check(fc.property(requestArb, membershipArb, seenArb, (request, membership, seen) => {
    const decision = decideRecovery(request, membership, seen);
    if (decision?.kind !== 'chosen') return true;
    const source = membership.members.find((m) => m.name === decision.pod)!;
    return !source.learner && source.revision !== undefined
      && voters(membership).every((m) => m.revision === undefined || m.revision <= source.revision!);
  })));

  it('never marks a claim or restarts the source while the members show a quorum', () => {
    const record: RecoveryRecord = { name: 'kv-recovery', uid: 'cm', createdAtMs: NOW - 10_000, pod: 'kv-0', memberId: 'm0', id: 'r', sourcePodUid: 'pod-kv-0' };
    check(fc.property(membershipArb, fc.boolean(), seenArb, (membership, marked, seen) => {
      const pods = Array.from({ length: 9 }, (_, i) => pod(i));
      const livePods = new Map<string, HealingPod>(pods.map((p) => [p, { name: p, uid: `pod-${p}`, deleting: false, createdAtMs: NOW - 60_000 }]));
      const claims = new Map<string, HealingClaim>(pods.map((p) => [p, { name: `data-${p}`, uid: `c-${p}`, deleting: false, phase: 'Bound', replacing: marked && p !== 'kv-0' ? 'm' : undefined }]));
      const step = decideRebuildStep({ request: 'auto', record, membership, size: 3, pods, livePods, claims, now: NOW, quorumLoss: seen });
      const action = step && 'action' in step ? step.action : undefined;
      return !quorumVisible(membership) || (action?.type !== 'mark' && action?.type !== 'restartSource');
    }));
  });
});

describe('member replacement (replacementSignal)', () => {
  const bounds = (unhealthyForMs: number) => ({ unhealthySince: new Map([['m1', NOW - unhealthyForMs]]), now: NOW, unhealthyAfterMs: 600_000 });
  const member = (healthy: boolean) => ({ id: 'm1', name: 'kv-1', peerUrls: [], learner: false, healthy, leader: false, alarms: [], problem: healthy ? undefined : 'connect ECONNREFUSED' });
  const claim: HealingClaim = { name: 'data-kv-1', uid: 'c1', deleting: false, phase: 'Bound' };
  // Defect 3: the volume's node only cordoned.
  const drained = { message: '0/6 nodes are available: 1 node(s) were unschedulable, 5 node(s) had volume node affinity conflict.', everyNodeConflicts: false };

  it('replaces an unschedulable member at once only when every node the scheduler counted conflicts with its volume', () => check(fc.property(unschedulableArb, fc.integer({ min: 0, max: 599_000 }), (scheduling, unhealthyForMs) => {
    const stuck: HealingPod = { name: 'kv-1', uid: 'p1', deleting: false, createdAtMs: NOW - 3_600_000, unschedulable: scheduling.message };
    const signal = replacementSignal(member(false), stuck, claim, bounds(unhealthyForMs));
    return signal?.replace === scheduling.everyNodeConflicts && volumeNodeGone(scheduling.message) === scheduling.everyNodeConflicts;
  }), [[drained, 5_000]]));

  it('never replaces a healthy member whose data nothing condemns (no CORRUPT alarm, its claim bound and kept)', () => check(fc.property(fc.option(unschedulableArb), fc.integer({ min: 0, max: 10_000_000 }), (scheduling, unhealthyForMs) => {
    const p: HealingPod = { name: 'kv-1', uid: 'p1', deleting: false, createdAtMs: NOW - 3_600_000, unschedulable: scheduling?.message };
    return replacementSignal(member(true), p, claim, bounds(unhealthyForMs)) === undefined;
  })));

  it('replaces a member unhealthy for a reason a restart or a network fault can give only after healing.unhealthySeconds', () => check(fc.property(fc.integer({ min: 0, max: 1_200_000 }), (unhealthyForMs) => {
    const p: HealingPod = { name: 'kv-1', uid: 'p1', deleting: false, createdAtMs: NOW - 3_600_000 };
    return (replacementSignal(member(false), p, claim, bounds(unhealthyForMs))?.replace === true) === (unhealthyForMs >= 600_000);
  })));
});

describe('stale messages and stale clocks (invariant 18)', () => {
  const member = { id: 'm1', name: 'kv-1', peerUrls: [], learner: false, healthy: false, leader: false, alarms: [], problem: 'connect ECONNREFUSED' };
  const claim: HealingClaim = { name: 'data-kv-1', uid: 'c1', deleting: false, phase: 'Bound' };
  const messages = ['', 'panic: tocommit(12) is out of range [lastIndex(3)]. Was the raft log corrupted, truncated, or lost?', 'member count is unequal',
    'listen tcp :2379: bind: address already in use', 'goroutine 1 [running]: go.etcd.io/raft/v3.(*raft).Step raft.go:1257'];
  const podArb = fc.record({
    running: fc.option(fc.boolean(), { nil: undefined }),
    lastTermination: fc.constantFrom(...messages),
    lastLogTail: fc.constantFrom(...messages),
    exitAgoMs: fc.option(fc.integer({ min: 0, max: 3 * 3_600_000 }), { nil: undefined }),
  });

  it('condemns a member\'s data before the timeout only on an exit that is its state now: not running, within RECENT_EXIT_MS, with etcd\'s data-loss words', () => check(fc.property(podArb, fc.integer({ min: 0, max: 599_000 }), (p, unhealthyForMs) => {
    const pod: HealingPod = {
      name: 'kv-1', uid: 'p1', deleting: false, createdAtMs: NOW - 7_200_000, running: p.running, lastTermination: p.lastTermination || undefined,
      lastLogTail: p.lastLogTail || undefined, lastTerminationAtMs: p.exitAgoMs === undefined ? undefined : NOW - p.exitAgoMs,
    };
    const signal = replacementSignal(member, pod, claim, { unhealthySince: new Map([['m1', NOW - unhealthyForMs]]), now: NOW, unhealthyAfterMs: 600_000 });
    const exitNow = p.running !== true && p.exitAgoMs !== undefined && p.exitAgoMs <= RECENT_EXIT_MS;
    const condemned = exitNow && (dataLossIn(pod.lastTermination) ?? dataLossIn(pod.lastLogTail)) !== undefined;
    return (signal?.replace === true) === condemned;
  }), [[{ running: undefined, lastTermination: messages[2], lastLogTail: '', exitAgoMs: 3_600_000 }, 5_000]]));

  it('carries a member\'s replacement clock over from status only when this process saw it unhealthy at its previous look; any other clock starts now', () => {
    const names = ['kv-0', 'kv-1', 'kv-2', 'kv-3'];
    const recordedArb = fc.record({ healthy: fc.boolean(), unhealthySince: fc.option(fc.integer({ min: 0, max: 86_400_000 }).map((ago) => new Date(NOW - ago).toISOString()), { nil: undefined }) });
    check(fc.property(fc.subarray(names), fc.dictionary(fc.constantFrom(...names), recordedArb), fc.option(fc.subarray(names), { nil: undefined }), (unhealthy, recorded, seen) => {
      const now = new Date(NOW).toISOString();
      const before = new Map<string, RecordedMember>(Object.entries(recorded));
      const seenBefore = seen === undefined ? undefined : new Set(seen);
      const clocks = unhealthyClocks(unhealthy, before, seenBefore, now);
      return clocks.size === unhealthy.length && unhealthy.every((name) => {
        const clock = clocks.get(name)!;
        if (clock === now) return true;
        // An older clock: the one status wrote for a member it saw unhealthy, which this process saw unhealthy too.
        const earlier = before.get(name);
        return earlier !== undefined && !earlier.healthy && earlier.unhealthySince === clock && (seenBefore === undefined || seenBefore.has(name));
      }) && unhealthy.filter((n) => seenBefore !== undefined && !seenBefore.has(n)).every((n) => clocks.get(n) === now);
    }), [[['kv-1'], { 'kv-1': { healthy: false, unhealthySince: new Date(NOW - 3_600_000).toISOString() } }, []]]);
  });
});

describe('a CORRUPT alarm (replacementSignal with the voters\' hashes)', () => {
  const hashesArb = fc.record({ voters: fc.integer({ min: 1, max: 7 }), answers: fc.array(fc.option(fc.integer({ min: 1, max: 3 }), { nil: undefined }), { minLength: 7, maxLength: 7 }) });
  // Defect 4: the leader is the corrupt one; the alarmed follower holds the hash the other four agree on.
  const corruptLeader = { voters: 5, answers: [2, 1, 1, 1, 1, undefined, undefined] };

  it('never replaces a member for CORRUPT unless a strict majority of all voters agrees on a hash its own differs from', () => check(fc.property(hashesArb, ({ voters, answers }) => {
    const byMember = new Map(answers.slice(0, voters).flatMap((hash, i) => (hash === undefined ? [] : [[`m${i}`, { hash, compactRevision: 0 }] as const])));
    const signal = replacementSignal({ id: 'm1', name: 'kv-1', peerUrls: [], learner: false, healthy: true, leader: false, alarms: ['CORRUPT'] }, undefined,
      { name: 'data-kv-1', uid: 'c1', deleting: false, phase: 'Bound' }, { unhealthySince: new Map(), now: NOW, unhealthyAfterMs: 600_000, corruptionHashes: { revision: 9, voters, byMember } });
    if (!signal?.replace) return true;
    const own = byMember.get('m1');
    const agreeing = Math.max(0, ...[...byMember.values()].map((h) => [...byMember.values()].filter((x) => x.hash === h.hash).length));
    const majorityHash = [...byMember.values()].find((h) => [...byMember.values()].filter((x) => x.hash === h.hash).length === agreeing)?.hash;
    return own !== undefined && agreeing > voters / 2 && own.hash !== majorityHash;
  }), [[corruptLeader]]));
});

describe('defragmentation (decideDefragmentationStep)', () => {
  it('takes a member down for defragmentation only with a quorum, every voter healthy and caught up, a leader, no learner and no other step', () => check(fc.property(membershipArb, fc.option(fc.constant('an upgrade')), (membership, otherStep) => {
    const step = decideDefragmentationStep({
      membership, quotaBytes: 80 << 20, minFreePercent: 10, minSizeBytes: 0, intervalMs: 0, nospaceMarginPercent: 10, lastDefragmented: {}, otherStep: otherStep ?? undefined, now: NOW,
    });
    if (step.action?.type !== 'defragment') return true;
    return !otherStep && hasQuorum(membership) && notReady(membership) === undefined && !membership.members.some((m) => m.learner) && voters(membership).some((m) => m.leader);
  })));
});

describe('NOSPACE recovery (decideDefragmentationStep under NOSPACE)', () => {
  const QUOTA = 80 << 20;
  const nospaceArb = fc.record({
    membership: membershipArb,
    sizes: fc.array(fc.integer({ min: 1, max: 90 }), { minLength: 9, maxLength: 9 }),
    compacted: fc.boolean(),
    defragmented: fc.array(fc.boolean(), { minLength: 9, maxLength: 9 }),
  }).map(({ membership, sizes, compacted, defragmented }) => {
    const members = membership.members.map((m, i) => ({ ...m, dbSizeBytes: sizes[i] << 20 }));
    const withAlarm: MembershipStatus = { ...membership, members, alarms: [{ memberId: members[0].id, alarm: 'NOSPACE' }] };
    const lastDefragmented = Object.fromEntries(members.filter((_, i) => defragmented[i]).map((m) => [m.name, NOW - 1_000]));
    return { membership: withAlarm, lastDefragmented, compacted: compacted ? { revision: 1_000_000, at: NOW - 60_000 } : undefined };
  });

  it('disarms NOSPACE only once every voter\'s file is below the target, and every voter was defragmented since the compaction', () => check(fc.property(nospaceArb, ({ membership, lastDefragmented, compacted }) => {
    const input = { membership, quotaBytes: QUOTA, minFreePercent: 50, minSizeBytes: 0, intervalMs: 0, nospaceMarginPercent: 10, lastDefragmented, compacted, now: NOW };
    const step = decideDefragmentationStep(input);
    if (step.action?.type !== 'disarm') return true;
    const target = recoveryTarget(input);
    const measured = voters(membership).filter((m) => m.dbSizeBytes !== undefined);
    return measured.every((m) => m.dbSizeBytes! < target) && (compacted === undefined || measured.every((m) => (lastDefragmented[m.name] ?? -Infinity) >= compacted.at));
  })));
});

describe('a rolling restart (decideUpgradeStep)', () => {
  const upgradeArb = membershipArb.chain((membership) => fc.record({
    membership: fc.constant(membership),
    pods: fc.tuple(...membership.members.filter((m) => m.name).map((m) => fc.record({
      name: fc.constant(m.name), uid: fc.constant(`uid-${m.name}`), resourceVersion: fc.constant('1'), revision: fc.constantFrom('r1', 'r2'),
      image: fc.constant('registry.k8s.io/etcd:3.6.8-0'), args: fc.constant([] as string[]), deleting: fc.constantFrom(false, false, false, true),
    }))),
    extraReplicas: fc.integer({ min: 0, max: 1 }),
  }));

  it('takes a healthy member down only when every other voter is healthy and caught up, none restarts, no learner waits; the leader only as the last one', () => check(fc.property(upgradeArb, ({ membership, pods, extraReplicas }) => {
    const step = decideUpgradeStep({
      targetImage: 'registry.k8s.io/etcd:3.6.8-0', targetArgs: [], replicas: pods.length + extraReplicas, statefulSetCurrent: true, updateRevision: 'r2', pods: pods as MemberPod[], membership,
    });
    const action = step.action;
    if (action?.type !== 'deletePod') return true;
    const target = membership.members.find((m) => m.name === action.pod.name);
    if (pods.some((p) => p.deleting)) return false; // never two restarts at once
    if (!target?.healthy) return hasQuorum(membership); // already down: costs nothing more, with a quorum of the others
    const others = voters(membership).filter((m) => m !== target);
    return notReady(membership) === undefined && !membership.members.some((m) => m.learner) && (!target.leader || others.length === 0);
  })));
});

describe('the migration to TLS, Switching (gateSwitchingRestart)', () => {
  const PLAIN_PEER = ['--listen-peer-urls=http://0.0.0.0:2380', '--listen-client-urls=https://0.0.0.0:2379', '--peer-cert-file=/tls/member/tls.crt'];
  const TLS_PEER = ['--listen-peer-urls=https://0.0.0.0:2380', '--listen-client-urls=https://0.0.0.0:2379', '--peer-cert-file=/tls/member/tls.crt'];
  const switchingArb = membershipArb.chain((membership) => fc.record({
    members: fc.tuple(...membership.members.map((m) => fc.boolean().map((https) => ({ ...m, peerUrls: m.peerUrls.map((u) => (https ? u.replace(/^http:/, 'https:') : u)) })))),
    pods: fc.tuple(...membership.members.filter((m) => m.name).map((m) => fc.record({
      name: fc.constant(m.name), uid: fc.constant(`uid-${m.name}`), resourceVersion: fc.constant('1'), revision: fc.constantFrom('r1', 'r2'),
      image: fc.constant('registry.k8s.io/etcd:3.6.8-0'), args: fc.constantFrom(PLAIN_PEER, TLS_PEER), deleting: fc.constantFrom(false, false, false, true),
    }))),
    restart: fc.option(fc.nat()),
  }));
  const https = (m: { peerUrls: readonly string[] }) => m.peerUrls.length > 0 && m.peerUrls.every((u) => u.startsWith('https:'));

  it('never restarts a member onto TLS while it still advertises http, nor while a member listening on TLS still advertises http; never two members half away', () => check(fc.property(switchingArb, ({ members, pods, restart }) => {
    const candidate = restart === null || pods.length === 0 ? undefined : pods[restart % pods.length];
    const action = gateSwitchingRestart(candidate ? { type: 'deletePod', pod: candidate as MemberPod, reason: 'outdated', change: 'TLS' } : undefined, pods as MemberPod[], members, TLS_PEER);
    const memberOf = (name: string) => members.find((m) => m.name === name);
    const listensTls = (p: { args: readonly string[] }) => templateTls(p.args)?.peer === true;
    const tlsUnderHttp = pods.filter((p) => !p.deleting && listensTls(p) && memberOf(p.name) && !https(memberOf(p.name)!));
    const halfAway = pods.filter((p) => !p.deleting && !listensTls(p) && memberOf(p.name) && https(memberOf(p.name)!));
    if (action?.type === 'deletePod') {
      const member = memberOf(action.pod.name);
      if (tlsUnderHttp.length > 0) return false;
      if (!listensTls(action.pod) && member && !https(member)) return false;
    }
    if (action?.type === 'updatePeerUrls') {
      const pod = pods.find((p) => p.name === action.pod);
      // Switching a plain listener's URL makes it half away: only when no other member is.
      if (pod && !listensTls(pod) && halfAway.some((p) => p.name !== action.pod)) return false;
    }
    return true;
  })));
});
