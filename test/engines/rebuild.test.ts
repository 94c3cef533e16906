/**
 * The controller's steps of a quorum-loss recovery (engines/etcd/rebuild.ts),
 * each decided from the world alone, so a controller killed after any step
 * resumes with the next one and never repeats a restart: record the
 * decision, mark the others' claims, restart the source once, hand the
 * marked members to replacement once the rebuilt member holds a quorum,
 * finish.
 */
import { decideRebuildStep, NO_MEMBER, type RebuildInput, type RecoveryRecord } from '../../engines/etcd/rebuild.js';
import type { HealingClaim, HealingPod } from '../../engines/etcd/replacement.js';
import type { MemberStatus, MembershipStatus } from '../../engines/membership.js';

const NOW = Date.parse('2026-11-26T12:00:00Z');
const pods = ['kv-0', 'kv-1', 'kv-2'];

const answering = (i: number, term: number, index: number, over: Partial<MemberStatus> = {}): MemberStatus =>
  ({ id: `m${i}`, name: `kv-${i}`, peerUrls: [], learner: false, healthy: false, leader: false, problem: 'no leader', raftTerm: term, raftIndex: index, alarms: [], ...over });
const silent = (i: number): MemberStatus => ({ id: `m${i}`, name: `kv-${i}`, peerUrls: [], learner: false, healthy: false, leader: false, problem: 'ECONNREFUSED', alarms: [] });
const healthy = (i: number, id: string, over: Partial<MemberStatus> = {}): MemberStatus => ({ id, name: `kv-${i}`, peerUrls: [], learner: false, healthy: true, leader: i === 0, alarms: [], ...over });
const membership = (members: MemberStatus[]): MembershipStatus => {
  const voters = members.filter((m) => !m.learner);
  return { members, voters: voters.length, healthyVoters: voters.filter((m) => m.healthy).length, alarms: [] };
};
const livePods = (uids: Record<string, string> = {}): Map<string, HealingPod> =>
  new Map(pods.map((p) => [p, { name: p, uid: uids[p] ?? `uid-${p}`, deleting: false, createdAtMs: NOW - 60_000 }]));
const claims = (marks: Record<string, string> = {}): Map<string, HealingClaim> =>
  new Map(pods.map((p) => [p, { name: `data-${p}`, uid: `claim-${p}`, deleting: false, phase: 'Bound', replacing: marks[p] }]));
const record: RecoveryRecord = { name: 'kv-recovery', uid: 'cm', createdAtMs: NOW - 42_000, pod: 'kv-0', memberId: 'm0', id: 'r1', sourcePodUid: 'uid-kv-0' };
const lost = membership([answering(0, 3, 40), answering(1, 3, 30), silent(2)]);

/** A loss the controller has seen long enough, on enough looks (recovery.test.ts judges the clock). */
const PROVEN = { forMs: 60_000, looks: 3, requiredMs: 60_000 };
const input = (over: Partial<RebuildInput>): RebuildInput => ({ size: 3, pods, livePods: livePods(), claims: claims(), now: NOW, membership: lost, quorumLoss: PROVEN, ...over });

describe('before a decision', () => {
  it('does nothing without a request, however long the quorum is lost', () => {
    expect(decideRebuildStep(input({}))).toBeUndefined();
  });

  it('refuses a member behind another survivor, and writes nothing', () => {
    expect(decideRebuildStep(input({ request: 'kv-1' }))).toMatchObject({ kind: 'refused', message: expect.stringMatching(/kv-0 .* is more advanced/) });
  });

  it('records the decision first: the source, its member id and the pod that runs it now', () => {
    expect(decideRebuildStep(input({ request: 'auto' }))).toMatchObject({
      kind: 'recovering', action: { type: 'record', pod: 'kv-0', memberId: 'm0', sourcePodUid: 'uid-kv-0', id: NOW.toString(36) },
    });
  });

  it('waits while the chosen member has no pod to restart', () => {
    const step = decideRebuildStep(input({ request: 'auto', livePods: new Map() }));
    expect(step).toMatchObject({ kind: 'recovering' });
    expect(step && 'action' in step ? step.action : undefined).toBeUndefined();
  });
});

describe('with the decision recorded, before the source restarts', () => {
  it('marks each other member\'s claim with its old member id, one per step, the lowest ordinal first', () => {
    expect(decideRebuildStep(input({ record }))).toMatchObject({ action: { type: 'mark', pod: 'kv-1', memberId: 'm1', claim: { name: 'data-kv-1', uid: 'claim-kv-1' } } });
    expect(decideRebuildStep(input({ record, claims: claims({ 'kv-1': 'm1' }) }))).toMatchObject({ action: { type: 'mark', pod: 'kv-2', memberId: 'm2' } });
  });

  it('marks the claim of a pod that had no member with a member id no rebuilt member has', () => {
    const step = decideRebuildStep(input({ record, claims: claims({ 'kv-1': 'm1' }), membership: membership([answering(0, 3, 40), answering(1, 3, 30)]) }));
    expect(step).toMatchObject({ action: { type: 'mark', pod: 'kv-2', memberId: NO_MEMBER } });
  });

  it('restarts the recorded pod of the source once every other claim is marked, never the source\'s own claim', () => {
    expect(decideRebuildStep(input({ record, claims: claims({ 'kv-1': 'm1', 'kv-2': 'm2' }) }))).toMatchObject({ action: { type: 'restartSource', pod: 'kv-0', uid: 'uid-kv-0' } });
  });
});

describe('after the source restarted (a controller killed there resumes here)', () => {
  const marked = claims({ 'kv-1': 'm1', 'kv-2': 'm2' });

  it('does not restart it again: its pod is a new one, so it waits for the rebuild', () => {
    const step = decideRebuildStep(input({ record, claims: marked, livePods: livePods({ 'kv-0': 'uid-kv-0-new' }), membership: membership([silent(0), answering(1, 3, 30), silent(2)]) }));
    expect(step).toMatchObject({ kind: 'recovering', message: expect.stringMatching(/waiting for kv-0 to start as a one-member cluster/) });
    expect(step && 'action' in step ? step.action : undefined).toBeUndefined();
  });

  it('does not take an old member that answers with the recorded id for the rebuilt one', () => {
    const step = decideRebuildStep(input({ record, claims: marked, livePods: livePods({ 'kv-0': 'uid-kv-0-new' }), membership: membership([answering(0, 3, 40), answering(1, 3, 30), silent(2)]) }));
    expect(step).toMatchObject({ kind: 'recovering', message: expect.stringMatching(/waiting for kv-0/) });
  });

  it('hands the marked members to member replacement once the rebuilt member (a new id) holds a quorum alone', () => {
    const step = decideRebuildStep(input({ record, claims: marked, livePods: livePods({ 'kv-0': 'uid-kv-0-new' }), membership: membership([healthy(0, 'n0')]) }));
    expect(step).toMatchObject({ kind: 'replacing', message: expect.stringMatching(/one-member cluster with a quorum \(member n0\); 1 of 3 voting members, waiting for kv-1, kv-2 to join empty/) });
  });

  it('keeps handing over while a learner is not yet promoted', () => {
    const step = decideRebuildStep(input({ record, claims: claims(), livePods: livePods({ 'kv-0': 'uid-kv-0-new' }), membership: membership([healthy(0, 'n0'), healthy(1, 'n1'), healthy(2, 'n2', { learner: true })]) }));
    expect(step).toMatchObject({ kind: 'replacing', message: expect.stringMatching(/waiting for kv-2 to be promoted/) });
  });

  it('finishes at full size, every voter healthy, nothing marked: removes the request and the record, and says how long it took', () => {
    const step = decideRebuildStep(input({ record, claims: claims(), livePods: livePods({ 'kv-0': 'uid-kv-0-new' }), membership: membership([healthy(0, 'n0'), healthy(1, 'n1'), healthy(2, 'n2')]) }));
    expect(step).toMatchObject({ kind: 'recovering', action: { type: 'finish', record: { name: 'kv-recovery', uid: 'cm' }, message: expect.stringMatching(/^recovered from kv-0 \(member m0\): 3 of 3 voting members healthy.* 42 s after the decision$/) } });
  });

  it('goes on with its record even once the request is gone: the decision is the record', () => {
    const step = decideRebuildStep(input({ record, request: undefined, claims: marked, livePods: livePods({ 'kv-0': 'uid-kv-0-new' }), membership: membership([healthy(0, 'n0')]) }));
    expect(step?.kind).toBe('replacing');
  });
});

describe('a quorum that shows itself before the source restarts (issue 40, defect 1)', () => {
  const shows = { ...membership([answering(0, 3, 40), answering(1, 3, 30), silent(2)]), listedLinearizably: true };

  it('consumes a refused request: its annotation is removed, so it never fires later', () => {
    expect(decideRebuildStep(input({ request: 'auto', membership: shows }))).toMatchObject({ kind: 'refused', action: { type: 'consume' } });
  });

  it('abandons a recorded recovery: the marks come off the claims one at a time, then the request and record go; the source is never restarted', () => {
    const first = decideRebuildStep(input({ request: 'auto', record, membership: shows, claims: claims({ 'kv-1': 'm1', 'kv-2': 'm2' }) }));
    expect(first).toMatchObject({ kind: 'recovering', action: { type: 'unmark', pod: 'kv-1', claim: { name: 'data-kv-1', uid: 'claim-kv-1' } } });
    const second = decideRebuildStep(input({ request: 'auto', record, membership: shows, claims: claims({ 'kv-2': 'm2' }) }));
    expect(second).toMatchObject({ kind: 'recovering', action: { type: 'unmark', pod: 'kv-2' } });
    const last = decideRebuildStep(input({ request: 'auto', record, membership: shows, claims: claims() }));
    expect(last).toMatchObject({ kind: 'recovering', action: { type: 'abandon', record: { name: 'kv-recovery', uid: 'cm' }, message: expect.stringMatching(/abandoned before kv-0 restarted.*linearizable/) } });
  });

  it('abandons it too when a voter reports a leader again', () => {
    const leader = membership([answering(0, 3, 40), healthy(1, 'm1', { leader: true }), silent(2)]);
    expect(decideRebuildStep(input({ request: 'auto', record, membership: leader, claims: claims() }))).toMatchObject({ action: { type: 'abandon' } });
  });

  it('goes on as before while the loss holds', () => {
    expect(decideRebuildStep(input({ request: 'auto', record, claims: claims({ 'kv-1': 'm1', 'kv-2': 'm2' }) }))).toMatchObject({ action: { type: 'restartSource', pod: 'kv-0' } });
  });
});
