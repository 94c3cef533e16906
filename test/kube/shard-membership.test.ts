/**
 * Shard membership on a fake clock against in-memory Leases: replicas agree
 * on who works on what, a replica that joins or dies moves only the keys it
 * must, and at no instant may two replicas work on one key (checked after
 * every step of the clock over 300 keys: the invariant the hand-over
 * barrier exists for).
 */
import { ShardMembership } from '../../kube/shard-membership.js';
import { ownerOf } from '../../kube/shard-ring.js';
import { bucketKey, bucketKeyOwner } from '../../kube/shard-buckets.js';
import { silentLogger } from '../../kube/log.js';
import { FakeClock } from '../support/fake-clock.js';
import { FakeLeaseStore } from '../support/fake-lease-store.js';

const TIMINGS = { leaseDurationMs: 15_000, renewDeadlineMs: 10_000, retryPeriodMs: 2_000 };
const KEYS = Array.from({ length: 300 }, (_, i) => `uid-${i}`);
type Owner = (key: string, members: readonly string[]) => string | undefined;
/** The controller's assignment: 256 buckets with bounded loads (shard-buckets.ts), which may move buckets between replicas that stay. */
const BUCKET_KEYS = Array.from({ length: 256 }, (_, b) => bucketKey(b));
const bucketOwner: Owner = (key, members) => bucketKeyOwner(key, members, 256);

interface Replica {
  readonly name: string;
  readonly membership: ShardMembership;
  /** Keys it is working on: it stops a key once a new view takes it away and its work in flight is over (onView drains it). */
  readonly working: Set<string>;
  /** Keys a new view takes away whose work in flight is still finishing: neither taken up again nor dropped meanwhile. */
  readonly draining: Set<string>;
  lostAt?: number;
}

/** `drainMs`: how long work in flight on keys a new view takes away goes on (a reconcile finishing, the caches relisting). */
function replica(store: FakeLeaseStore, clock: FakeClock, name: string, drainMs = 0, owner: Owner = ownerOf): Replica {
  const working = new Set<string>();
  const draining = new Set<string>();
  const r: Replica = {
    name, working, draining,
    membership: new ShardMembership({
      client: store.client(name), namespace: 'dkv-system', group: 'dkv-controller', identity: name, ...TIMINGS, clock, log: silentLogger, owner,
      // Drains what the new view takes away before the view is adopted and published.
      onView: async (view) => {
        for (const key of working) if (owner(key, view.members) !== name) draining.add(key);
        if (drainMs > 0) await new Promise<void>((resolve) => clock.after(drainMs, resolve));
        for (const key of draining) working.delete(key);
        draining.clear();
      },
      onLost: () => {
        working.clear();
        r.lostAt = clock.monotonic();
      },
    }),
  };
  return r;
}

/** Each replica works on every key it may, and stops keys it may not: what a controller's work loop would do. */
function work(replicas: readonly Replica[], keys: readonly string[]): void {
  for (const r of replicas) {
    for (const key of keys) {
      if (r.draining.has(key)) continue;
      if (r.membership.mayWork(key)) r.working.add(key);
      else r.working.delete(key);
    }
  }
}

/** Advances the clock in small steps, applying work() and checking no key has two workers after each. */
async function run(clock: FakeClock, replicas: readonly Replica[], ms: number, violations: string[], keys: readonly string[] = KEYS): Promise<void> {
  for (let t = 0; t < ms; t += 250) {
    await clock.advance(250);
    work(replicas, keys);
    for (const key of keys) {
      const workers = replicas.filter((r) => r.working.has(key)).map((r) => r.name);
      if (workers.length > 1) violations.push(`${key} worked on by ${workers.join(' and ')} at ${clock.monotonic()} ms`);
    }
  }
}

/** Replicas started together and run for `ms`: the store, the clock, the replicas and the violations seen so far. */
async function started(names: readonly string[], ms: number) {
  const store = new FakeLeaseStore();
  const clock = new FakeClock();
  const replicas = names.map((n) => replica(store, clock, n));
  for (const r of replicas) r.membership.start();
  const violations: string[] = [];
  await run(clock, replicas, ms, violations);
  return { store, clock, replicas, violations };
}

const owners = (replicas: readonly Replica[], keys: readonly string[] = KEYS) => new Map(keys.map((k) => [k, replicas.filter((r) => r.working.has(k)).map((r) => r.name).join(',')]));

describe('shard membership', () => {
  it('three replicas agree on one view and share every key, each worked on by exactly one', async () => {
    const { replicas, violations } = await started(['r-0', 'r-1', 'r-2'], 10_000);
    expect(violations).toEqual([]);
    expect(new Set(replicas.map((r) => r.membership.view.id)).size).toBe(1);
    expect(replicas[0].membership.view.members).toEqual(['r-0', 'r-1', 'r-2']);
    for (const key of KEYS) expect(replicas.filter((r) => r.working.has(key))).toHaveLength(1);
    for (const r of replicas) expect(r.working.size).toBeGreaterThan(KEYS.length / 5);
  });

  it('hands a joining replica its keys only after their owners let go, and moves no other key', async () => {
    const { store, clock, replicas, violations } = await started(['r-0', 'r-1', 'r-2'], 10_000);
    const before = owners(replicas);
    const joiner = replica(store, clock, 'r-3');
    const all = [...replicas, joiner];
    joiner.membership.start();
    await run(clock, all, 12_000, violations);
    expect(violations).toEqual([]);
    const after = owners(all);
    let moved = 0;
    for (const key of KEYS) {
      if (after.get(key) === before.get(key)) continue;
      expect(after.get(key)).toBe('r-3');
      moved++;
    }
    expect(moved).toBeGreaterThan(KEYS.length / 8);
    for (const key of KEYS) expect(after.get(key)).not.toBe('');
  });

  it('gives a dead replica\'s keys to the others after its Lease expires, having made it stop first', async () => {
    const { store, clock, replicas, violations } = await started(['r-0', 'r-1', 'r-2'], 10_000);
    const dying = replicas[2];
    const itsKeys = [...dying.working];
    store.unreachable.add('r-2'); // partitioned: it can neither renew nor list
    const cutAt = clock.monotonic();
    let takenAt: number | undefined;
    for (let t = 0; t < 30_000 && takenAt === undefined; t += 250) {
      await run(clock, replicas, 250, violations);
      if (itsKeys.every((k) => replicas[0].working.has(k) || replicas[1].working.has(k))) takenAt = clock.monotonic();
    }
    expect(violations).toEqual([]);
    expect(dying.lostAt! - cutAt).toBeLessThanOrEqual(TIMINGS.renewDeadlineMs);
    expect(takenAt! - cutAt).toBeGreaterThan(dying.lostAt! - cutAt); // it stopped before anyone took over
    expect(takenAt! - cutAt).toBeLessThanOrEqual(TIMINGS.leaseDurationMs + 2 * TIMINGS.retryPeriodMs + 1000);
    expect(dying.working.size).toBe(0);
  });

  it('never counts a key as handed over in a view whose hand-over never completed (replicas joining while an owner drains slowly)', async () => {
    const store = new FakeLeaseStore();
    const clock = new FakeClock();
    const violations: string[] = [];
    // r-0 alone owns every key; its drains take 3 s (long reconciles, a big relist).
    const first = replica(store, clock, 'r-0', 3000);
    first.membership.start();
    await run(clock, [first], 10_000, violations);
    expect(first.working.size).toBe(KEYS.length);
    // r-2 joins and adopts [r-0, r-2] before r-0 looks again; r-1 joins before r-0's next look, so
    // r-0 goes from [r-0] straight to [r-0, r-1, r-2]: the view [r-0, r-2] is never one r-0 publishes.
    const third = replica(store, clock, 'r-2', 500);
    const second = replica(store, clock, 'r-1', 500);
    third.membership.start();
    await run(clock, [first, third], 750, violations);
    second.membership.start();
    await run(clock, [first, second, third], 20_000, violations);
    // r-2 owned some keys in [r-0, r-2] and owns them in [r-0, r-1, r-2]: it must still wait for r-0 to let go.
    expect(violations).toEqual([]);
    for (const key of KEYS) expect([first, second, third].filter((r) => r.working.has(key))).toHaveLength(1);
  });

  it('lets the others take a stopped replica\'s keys at once: it frees its Lease', async () => {
    const { clock, replicas, violations } = await started(['r-0', 'r-1'], 8_000);
    const leaving = replicas[1];
    const itsKeys = [...leaving.working];
    await leaving.membership.stop();
    leaving.working.clear();
    await run(clock, [replicas[0]], 3 * TIMINGS.retryPeriodMs, violations);
    expect(itsKeys.every((k) => replicas[0].working.has(k))).toBe(true);
    expect(violations).toEqual([]);
  });

  it('hands over through the barrier the buckets bounded loads move between replicas that stay, as a join and a death reshuffle them', async () => {
    const store = new FakeLeaseStore();
    const clock = new FakeClock();
    const violations: string[] = [];
    const replicas = ['r-0', 'r-1', 'r-2'].map((n) => replica(store, clock, n, 1500, bucketOwner));
    for (const r of replicas) r.membership.start();
    await run(clock, replicas, 10_000, violations, BUCKET_KEYS);
    for (const r of replicas) expect(r.working.size).toBeLessThanOrEqual(Math.ceil(256 / 3));
    const before = owners(replicas, BUCKET_KEYS);

    const joiner = replica(store, clock, 'r-3', 1500, bucketOwner);
    const four = [...replicas, joiner];
    joiner.membership.start();
    await run(clock, four, 15_000, violations, BUCKET_KEYS);
    const afterJoin = owners(four, BUCKET_KEYS);
    const betweenStayers = BUCKET_KEYS.filter((k) => afterJoin.get(k) !== before.get(k) && afterJoin.get(k) !== 'r-3');
    expect(betweenStayers.length).toBeGreaterThan(0); // what this test is for: moves plain rendezvous hashing never makes
    for (const key of BUCKET_KEYS) expect(afterJoin.get(key)).not.toBe('');

    store.unreachable.add('r-1');
    await run(clock, four, 40_000, violations, BUCKET_KEYS);
    const survivors = four.filter((r) => r.name !== 'r-1');
    for (const key of BUCKET_KEYS) expect(survivors.filter((r) => r.working.has(key))).toHaveLength(1);
    for (const r of survivors) expect(r.working.size).toBeLessThanOrEqual(Math.ceil(256 / 3));
    expect(violations).toEqual([]);
  });
});
