/**
 * fast-check generators of what the Day-2 decision functions are handed:
 * memberships (voters and learners at ordinals with gaps, health, a leader
 * or none, raft positions, applied revisions, alarms, a linearizable list or
 * not), and the seed every property run of a file uses, printed so that a
 * failure seen in CI is replayed with DKV_PROPERTY_SEED.
 */
import fc from 'fast-check';
import type { MemberAlarm, MemberStatus, MembershipStatus } from '../../engines/membership.js';

export const pod = (i: number) => `kv-${i}`;
export const ordinalOf = (name: string) => Number(/-(\d+)$/.exec(name)?.[1] ?? -1);

/** Random states per property and CI run: thousands, as the issue asks, and still seconds for the whole file. */
export const RUNS = Number(process.env.DKV_PROPERTY_RUNS ?? 3000);

/** One seed per file, printed: `DKV_PROPERTY_SEED=<seed> npm run test:unit -- <file>` replays a run. */
export function propertySeed(file: string): number {
  const seed = process.env.DKV_PROPERTY_SEED ? Number(process.env.DKV_PROPERTY_SEED) : Date.now() % 2 ** 31;
  process.stdout.write(`property tests in ${file}: seed ${seed}, ${RUNS} runs per property (DKV_PROPERTY_SEED=${seed} replays them)\n`);
  return seed;
}

interface MemberDraft {
  readonly ordinal: number;
  readonly learner: boolean;
  readonly started: boolean;
  readonly answers: boolean;
  readonly knowsLeader: boolean;
  readonly term: number;
  readonly index: number;
  readonly revision: number;
  /** How many committed entries it has yet to apply: a handful under load, thousands while it replays its log. */
  readonly applyLag: number;
  readonly corrupt: boolean;
  readonly nospace: boolean;
}

const draft = (ordinal: number): fc.Arbitrary<MemberDraft> => fc.record({
  ordinal: fc.constant(ordinal),
  learner: ordinal > 0 ? fc.constantFrom(false, false, false, true) : fc.constant(false),
  started: fc.constantFrom(true, true, true, true, false),
  answers: fc.constantFrom(true, true, true, false),
  knowsLeader: fc.constantFrom(true, true, false),
  term: fc.integer({ min: 1, max: 6 }),
  index: fc.integer({ min: 10, max: 500 }),
  revision: fc.integer({ min: 1, max: 400 }),
  applyLag: fc.oneof(fc.integer({ min: 0, max: 20 }), fc.integer({ min: 0, max: 5000 })),
  corrupt: fc.constantFrom(false, false, false, false, false, false, true),
  nospace: fc.constantFrom(false, false, false, false, false, false, true),
});

function toMember(d: MemberDraft, leaderOrdinal: number | undefined): MemberStatus {
  const base = { id: `m${d.ordinal}`, peerUrls: [`http://${pod(d.ordinal)}.kv-peers:2380`], learner: d.learner, alarms: [...(d.corrupt ? ['CORRUPT' as const] : []), ...(d.nospace ? ['NOSPACE' as const] : [])] };
  if (!d.started) return { ...base, name: '', healthy: false, leader: false, problem: 'added, not started' };
  if (!d.answers) return { ...base, name: pod(d.ordinal), healthy: false, leader: false, problem: 'connect ECONNREFUSED' };
  const healthy = d.knowsLeader;
  return {
    ...base, name: pod(d.ordinal), healthy, leader: healthy && leaderOrdinal === d.ordinal, problem: healthy ? undefined : 'no leader',
    raftTerm: d.term, raftIndex: d.index * 20, raftAppliedIndex: Math.max(0, d.index * 20 - d.applyLag), revision: d.revision, dbSizeBytes: 64 << 20, dbSizeInUseBytes: 32 << 20, version: '3.6.8',
  };
}

/** A membership as the controller may see it: 1 to 9 members at ordinals 0..8 with gaps, anything from all healthy to none answering. */
export const membershipArb: fc.Arbitrary<MembershipStatus> = fc
  .uniqueArray(fc.integer({ min: 0, max: 8 }), { minLength: 1, maxLength: 9 })
  .chain((ordinals) => fc.tuple(fc.tuple(...[...ordinals].sort((a, b) => a - b).map(draft)), fc.option(fc.constantFrom(...ordinals)), fc.boolean()))
  .map(([drafts, leaderPick, linearizable]) => {
    const leaderOrdinal = drafts.some((d) => d.ordinal === leaderPick && !d.learner && d.started && d.answers && d.knowsLeader) ? leaderPick ?? undefined : undefined;
    const members = drafts.map((d) => toMember(d, leaderOrdinal));
    const voters = members.filter((m) => !m.learner);
    const alarms: MemberAlarm[] = members.flatMap((m) => m.alarms.map((alarm) => ({ memberId: m.id, alarm })));
    return { members, voters: voters.length, healthyVoters: voters.filter((m) => m.healthy).length, leaderId: members.find((m) => m.leader)?.id, alarms, listedLinearizably: linearizable };
  });

/** Whether the members themselves show a quorum: a linearizable list, a healthy majority, or a voter that knows a leader. */
export function quorumVisible(m: MembershipStatus): boolean {
  const voters = m.members.filter((x) => !x.learner);
  return Boolean(m.listedLinearizably) || m.healthyVoters > m.voters / 2 || voters.some((x) => x.healthy);
}

/** The scheduler's message for a pod it cannot place: per node, a reason; `conflicts` of them a volume node affinity conflict. */
export const unschedulableArb: fc.Arbitrary<{ message: string; everyNodeConflicts: boolean }> = fc
  .record({
    conflicts: fc.integer({ min: 0, max: 6 }),
    cordoned: fc.integer({ min: 0, max: 2 }),
    full: fc.integer({ min: 0, max: 2 }),
    unreachable: fc.integer({ min: 0, max: 2 }),
    wording: fc.constantFrom('had volume node affinity conflict', 'didn\'t match PersistentVolume\'s node affinity'),
    preemption: fc.boolean(),
  })
  .filter((r) => r.conflicts + r.cordoned + r.full + r.unreachable > 0)
  .map((r) => {
    const total = r.conflicts + r.cordoned + r.full + r.unreachable;
    const reasons = [
      r.cordoned ? `${r.cordoned} node(s) were unschedulable` : '',
      r.full ? `${r.full} Insufficient memory` : '',
      r.unreachable ? `${r.unreachable} node(s) had untolerated taint {node.kubernetes.io/unreachable: }` : '',
      r.conflicts ? `${r.conflicts} node(s) ${r.wording}` : '',
    ].filter(Boolean);
    const tail = r.preemption ? ` preemption: 0/${total} nodes are available: ${total} Preemption is not helpful for scheduling.` : '';
    return { message: `0/${total} nodes are available: ${reasons.join(', ')}.${tail}`, everyNodeConflicts: r.conflicts === total };
  });
