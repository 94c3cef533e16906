/**
 * A learner that never catches up is removed and tried again, each time
 * with twice as long to catch up (capped at 8 times the first bound). The
 * count lives in status.learnerRetry, not in the process: each reconcile
 * below is a controller that knows only the status the last one wrote (a
 * restart between any two), on a clock the test moves.
 */
import { loadDefaultConfig } from '../../api/config.js';
import { LEARNER_CATCH_UP_CAP, learnerCatchUpBoundMs, type HealingClaim, type HealingPod } from '../../engines/etcd/replacement.js';
import type { MembershipStatus, MemberStatus } from '../../engines/membership.js';
import type { DistributedKVStatus } from '../../imports/distributedkv.js';
import { clusterIdentity } from '../../model/cluster-identity.js';
import { healingStep, type HealingReader } from '../../reconciler/day2/member-replacement.js';
import { FakeClock } from '../support/fake-clock.js';

const config = loadDefaultConfig();
const FIRST_MS = config.healing.learnerCatchUpSeconds * 1000;
const pod = (i: number) => `kv-${i}`;
const peerUrl = (p: string) => `http://${p}.kv-peers:2380`;
const voter = (i: number): MemberStatus => ({ id: `m${i}`, name: pod(i), peerUrls: [peerUrl(pod(i))], learner: false, healthy: true, leader: i === 0, alarms: [] });
const membershipOf = (members: MemberStatus[]): MembershipStatus => {
  const voters = members.filter((m) => !m.learner);
  return { members, voters: voters.length, healthyVoters: voters.filter((m) => m.healthy).length, leaderId: 'm0', alarms: [] };
};

describe('a learner that never catches up', () => {
  it('is removed and tried again after 300 s, then 600 s, 1200 s and 2400 s, and never longer, across controller restarts', async () => {
    const clock = new FakeClock();
    let status: DistributedKVStatus | undefined;
    let learnerPodCreated = clock.now();
    let learnerId = 0;
    const reader: HealingReader = {
      pods: async () => new Map<string, HealingPod>([0, 1, 2].map((i) => [pod(i), { name: pod(i), uid: `u${i}`, deleting: false, createdAtMs: i === 2 ? learnerPodCreated : clock.now() - 86_400_000 }])),
      claims: async () => new Map<string, HealingClaim>([0, 1, 2].map((i) => [pod(i), { name: `data-${pod(i)}`, uid: `c${i}`, deleting: false, phase: 'Bound' }])),
    };
    /** One reconcile by a freshly started controller: it knows the status the last one wrote, nothing else. */
    const reconcile = async () => {
      const learner: MemberStatus = { ...voter(2), id: `learner-${learnerId}`, learner: true, leader: false };
      const decision = await healingStep(reader, {
        config, namespace: 'shop', identity: clusterIdentity('kv', config), size: 3, replicas: 3, membership: membershipOf([voter(0), voter(1), learner]),
        previous: status, pod, peerUrl, now: clock.now(),
      });
      status = { ...status, learnerRetry: decision.learnerRetry } as DistributedKVStatus;
      return decision;
    };
    /** The removal done and a new learner's pod created now (the steps between are replacement.test.ts's). */
    const tryAgain = () => { learnerId++; learnerPodCreated = clock.now(); };

    const removedAfter: number[] = [];
    for (let attempt = 0; attempt < 6; attempt++) {
      const started = clock.now();
      // Bounded: each attempt is looked at every 10 s up to an hour.
      for (let look = 0; look < 360; look++) {
        await clock.advance(10_000);
        const d = await reconcile();
        if (d.step?.action?.type === 'mark') {
          expect(d.step.action).toMatchObject({ pod: 'kv-2', memberId: `learner-${learnerId}` });
          expect(d.learnerRetry).toEqual({ pod: 'kv-2', attempts: attempt + 1 });
          removedAfter.push((clock.now() - started) / 1000);
          break;
        }
        expect(d.step).toBeUndefined(); // left to the scaling step, which promotes a learner once it has caught up
      }
      expect(removedAfter).toHaveLength(attempt + 1);
      tryAgain();
    }
    // Removed at the first look past each bound (looks every 10 s).
    expect(removedAfter).toEqual([310, 610, 1210, 2410, 2410, 2410]);
    expect(status?.learnerRetry).toEqual({ pod: 'kv-2', attempts: 6 });

    // Promoted at last: the record goes, and a later learner of kv-2 starts again from 300 s.
    const promoted = await healingStep(reader, {
      config, namespace: 'shop', identity: clusterIdentity('kv', config), size: 3, replicas: 3, membership: membershipOf([voter(0), voter(1), voter(2)]),
      previous: status, pod, peerUrl, now: clock.now(),
    });
    expect(promoted.learnerRetry).toBeUndefined();
  });

  it('forgets the record once the cluster is scaled in below the pod: a later kv-2 is a new member, owed the first bound', async () => {
    const reader: HealingReader = {
      pods: async () => new Map<string, HealingPod>([0, 1].map((i) => [pod(i), { name: pod(i), uid: `u${i}`, deleting: false, createdAtMs: 0 }])),
      claims: async () => new Map<string, HealingClaim>([0, 1].map((i) => [pod(i), { name: `data-${pod(i)}`, uid: `c${i}`, deleting: false, phase: 'Bound' }])),
    };
    const previous = { learnerRetry: { pod: 'kv-2', attempts: 3 } } as DistributedKVStatus;
    const look = (size: number) => healingStep(reader, {
      config, namespace: 'shop', identity: clusterIdentity('kv', config), size, replicas: size, membership: membershipOf([voter(0), voter(1)]),
      previous, pod, peerUrl, now: 0,
    });
    // Still size 3: kv-2's learner was removed and the next one is coming; the record stays.
    expect((await look(3)).learnerRetry).toEqual({ pod: 'kv-2', attempts: 3 });
    expect((await look(2)).learnerRetry).toBeUndefined();
  });

  it('doubles the first bound per attempt up to 8 times it', () => {
    expect([0, 1, 2, 3, 4, 10].map((a) => learnerCatchUpBoundMs(FIRST_MS, a) / FIRST_MS)).toEqual([1, 2, 4, 8, 8, 8]);
    expect(LEARNER_CATCH_UP_CAP).toBe(8);
  });
});
