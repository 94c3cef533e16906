/**
 * Quorum-loss recovery on request: nothing without a request; with one, the
 * source is the most advanced voting member that answers (the revision it
 * applied, then raft term and index), and every other request is refused
 * with the reason; the loss must be proven first (issue 40, defect 1).
 */
import { decideRecovery as decide, type QuorumLossSeen } from '../../engines/etcd/recovery.js';
import type { MemberStatus, MembershipStatus } from '../../engines/membership.js';

const pod = (i: number) => `kv-${i}`;

/** A loss the controller has seen long enough, on enough looks: what these cases judge is the source. */
const PROVEN: QuorumLossSeen = { forMs: 60_000, looks: 3, requiredMs: 60_000 };
const decideRecovery = (request: string | undefined, membership: MembershipStatus | undefined, seen: QuorumLossSeen = PROVEN) => decide(request, membership, seen);

/** A member that answered its status request at this raft position (no leader: the quorum is lost). */
function answering(i: number, raftTerm: number, raftIndex: number, over: Partial<MemberStatus> = {}): MemberStatus {
  return { id: `m${i}`, name: pod(i), peerUrls: [], learner: false, healthy: false, leader: false, problem: 'no leader', raftTerm, raftIndex, revision: raftIndex - 10, alarms: [], ...over };
}

function silent(i: number): MemberStatus {
  return { id: `m${i}`, name: pod(i), peerUrls: [], learner: false, healthy: false, leader: false, problem: 'connect ECONNREFUSED', alarms: [] };
}

function membership(members: MemberStatus[]): MembershipStatus {
  const voters = members.filter((m) => !m.learner);
  return { members, voters: voters.length, healthyVoters: voters.filter((m) => m.healthy).length, alarms: [] };
}

describe('without a request', () => {
  it('decides nothing, whatever the quorum: a lost quorum stays hands-off', () => {
    expect(decideRecovery(undefined, membership([answering(0, 5, 100), silent(1), silent(2)]))).toBeUndefined();
    expect(decideRecovery('', membership([answering(0, 5, 100), silent(1), silent(2)]))).toBeUndefined();
    expect(decideRecovery('  ', undefined)).toBeUndefined();
  });
});

describe('auto', () => {
  it('chooses the only survivor', () => {
    expect(decideRecovery('auto', membership([silent(0), answering(1, 5, 100), silent(2)]))).toMatchObject({ kind: 'chosen', pod: 'kv-1', memberId: 'm1', raftTerm: 5, raftIndex: 100, revision: 90 });
  });

  it('chooses the higher raft index within a term', () => {
    expect(decideRecovery('auto', membership([answering(0, 5, 100), answering(1, 5, 120), silent(2), silent(3), silent(4)]))).toMatchObject({ kind: 'chosen', pod: 'kv-1' });
  });

  it('chooses the member that applied more (its revision) over a later raft term: the rebuild keeps what a member applied, not what it appended (issue 40)', () => {
    expect(decideRecovery('auto', membership([answering(0, 5, 500), answering(1, 6, 120), silent(2), silent(3), silent(4)]))).toMatchObject({ kind: 'chosen', pod: 'kv-0', revision: 490 });
  });

  it('chooses the later term, then the higher index, among members that applied as much', () => {
    expect(decideRecovery('auto', membership([answering(0, 5, 500, { revision: 100 }), answering(1, 6, 120, { revision: 100 }), silent(2)]))).toMatchObject({ kind: 'chosen', pod: 'kv-1' });
  });

  it('takes the lowest ordinal among members equally advanced', () => {
    expect(decideRecovery('auto', membership([silent(0), answering(1, 5, 100), answering(2, 5, 100), silent(3), silent(4)]))).toMatchObject({ kind: 'chosen', pod: 'kv-1' });
  });

  it('never chooses a learner, even one further ahead', () => {
    expect(decideRecovery('auto', membership([answering(0, 5, 100), silent(1), silent(2), answering(3, 5, 200, { learner: true })]))).toMatchObject({ kind: 'chosen', pod: 'kv-0' });
  });
});

describe('a named member', () => {
  const twoSurvivors = membership([answering(0, 5, 100), answering(1, 5, 120), silent(2), silent(3), silent(4)]);

  it('is accepted when no member that answers is ahead of it', () => {
    expect(decideRecovery('kv-1', twoSurvivors)).toMatchObject({ kind: 'chosen', pod: 'kv-1', raftIndex: 120 });
  });

  it('is accepted when another is exactly as advanced', () => {
    expect(decideRecovery('kv-2', membership([silent(0), answering(1, 5, 100), answering(2, 5, 100), silent(3), silent(4)]))).toMatchObject({ kind: 'chosen', pod: 'kv-2' });
  });

  it('must not be accepted when a member that answers is ahead of it: the refusal names that member', () => {
    const decision = decideRecovery('kv-0', twoSurvivors);
    expect(decision).toMatchObject({ kind: 'refused' });
    expect(decision!.message).toMatch(/kv-0 \(term 5, index 100.*refused: kv-1 \(term 5, index 120.* is more advanced/);
  });

  it('must not be accepted when another member applied more, even at an earlier term', () => {
    expect(decideRecovery('kv-1', membership([answering(0, 5, 500), answering(1, 6, 120), silent(2), silent(3), silent(4)]))).toMatchObject({ kind: 'refused', message: expect.stringMatching(/kv-0 \(term 5, index 500, revision 490\)/) });
  });

  it('must not be accepted when it does not answer: how far it came cannot be judged', () => {
    expect(decideRecovery('kv-2', membership([answering(0, 5, 100), silent(1), silent(2)]))).toMatchObject({ kind: 'refused', message: expect.stringMatching(/kv-2 refused: it does not answer.*most advanced .* kv-0/) });
  });

  it('must not be accepted when it is not a member', () => {
    expect(decideRecovery('kv-7', membership([answering(0, 5, 100), silent(1), silent(2)]))).toMatchObject({ kind: 'refused', message: expect.stringMatching(/not a member/) });
  });

  it('must not be accepted when it is a learner', () => {
    expect(decideRecovery('kv-3', membership([answering(0, 5, 100), silent(1), silent(2), answering(3, 5, 100, { learner: true })]))).toMatchObject({ kind: 'refused', message: expect.stringMatching(/learner/) });
  });
});

describe('refused whatever the request', () => {
  it('when no member answers at all: the backup is the way back', () => {
    expect(decideRecovery('auto', undefined)).toMatchObject({ kind: 'refused', message: expect.stringMatching(/no member answers.*spec\.restore/) });
  });

  it('when the members are listed but no voting member answers its status', () => {
    expect(decideRecovery('auto', membership([silent(0), silent(1), silent(2)]))).toMatchObject({ kind: 'refused', message: expect.stringMatching(/no voting member answers/) });
  });

  it('when the cluster has a quorum: a failed member is replaced, never rebuilt from', () => {
    const healthy = (i: number) => answering(i, 5, 100, { healthy: true, problem: undefined });
    expect(decideRecovery('kv-0', membership([healthy(0), healthy(1), silent(2)]))).toMatchObject({ kind: 'refused', message: expect.stringMatching(/has a quorum \(2 of 3/) });
  });
});

describe('the quorum must be lost as etcd sees it, not merely as the controller sees it (issue 40, defect 1)', () => {
  it('refuses when the member list answered a linearizable read, though the controller reaches one member and it knows no leader', () => {
    // Before the fix: chosen (kv-0) while a quorum had just agreed to the member list.
    const seen = { ...membership([answering(0, 5, 100), silent(1), silent(2)]), listedLinearizably: true };
    expect(decideRecovery('auto', seen)).toMatchObject({ kind: 'refused', message: expect.stringMatching(/linearizable read/) });
  });

  it('waits while any voting member reports a leader: the quorum may hold where the controller cannot reach', () => {
    const seen = membership([answering(0, 5, 100, { healthy: true, problem: undefined }), silent(1), silent(2), silent(3), silent(4)]);
    expect(decideRecovery('auto', seen)).toMatchObject({ kind: 'waiting', message: expect.stringMatching(/kv-0 reports a leader/) });
  });

  it('waits until the loss has lasted healing.quorumLossSeconds and been seen on three looks in a row', () => {
    const lost = membership([answering(0, 5, 100), silent(1), silent(2)]);
    expect(decideRecovery('auto', lost, { forMs: 59_000, looks: 9, requiredMs: 60_000 })).toMatchObject({ kind: 'waiting', message: expect.stringMatching(/lost for 59 s on 9 looks/) });
    expect(decideRecovery('auto', lost, { forMs: 600_000, looks: 2, requiredMs: 60_000 })).toMatchObject({ kind: 'waiting' });
    expect(decideRecovery('auto', lost, { forMs: 60_000, looks: 3, requiredMs: 60_000 })).toMatchObject({ kind: 'chosen', pod: 'kv-0' });
  });
});
