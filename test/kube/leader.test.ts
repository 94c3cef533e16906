/**
 * Leader election's arithmetic on a fake clock against an in-memory Lease
 * API: when it takes a Lease, how long it waits for someone else's to
 * expire (measured on its own clock), and that a leader which cannot renew
 * stops before anyone may take over. test/integration/leader.test.ts runs
 * the same elector against the real API server.
 */
import { LeaderElector } from '../../kube/leader.js';
import { FakeClock } from '../support/fake-clock.js';
import { FakeLeaseApi } from '../support/fake-lease-api.js';

function elector(api: FakeLeaseApi, clock: FakeClock, identity = 'a', releaseOnStop?: boolean) {
  const record = { started: [] as number[], stopped: [] as number[] };
  const e = new LeaderElector({
    client: api, clock, namespace: 'dkv-system', name: 'dkv-controller', identity,
    leaseDurationMs: 15_000, renewDeadlineMs: 10_000, retryPeriodMs: 2_000,
    onStartedLeading: () => record.started.push(clock.monotonic()),
    onStoppedLeading: () => record.stopped.push(clock.monotonic()),
    releaseOnStop,
  });
  return { e, record };
}

describe('leader election on a fake clock', () => {
  it('takes a free Lease at once and renews it every retry period', async () => {
    const api = new FakeLeaseApi();
    const clock = new FakeClock();
    const { e, record } = elector(api, clock);
    e.start();
    await clock.advance(0);
    expect(record.started).toEqual([0]);
    expect(api.holder).toBe('a');
    await clock.advance(6_000);
    expect(api.writes).toEqual(['create a', 'update a', 'update a', 'update a']);
    await e.stop();
  });

  it('waits a full lease duration after it last saw someone else\'s Lease change, on its own clock, before taking it over', async () => {
    const api = new FakeLeaseApi();
    const clock = new FakeClock();
    api.takenBy('b');
    const { e, record } = elector(api, clock);
    e.start();
    // A candidate retries every retry period plus jitter (here 0.5 x 1.2 x 2 s): at 0, 3.2, 6.4, 9.6, 12.8, 16 s.
    await clock.advance(15_000);
    expect(record.started).toEqual([]);
    expect(api.holder).toBe('b');
    await clock.advance(1_000);
    expect(record.started).toEqual([16_000]);
    expect(api.holder).toBe('a');
    await e.stop();
  });

  it('restarts that wait whenever the other holder renews', async () => {
    const api = new FakeLeaseApi();
    const clock = new FakeClock();
    api.takenBy('b');
    const { e, record } = elector(api, clock);
    e.start();
    await clock.advance(10_000);
    api.takenBy('b'); // b renews
    await clock.advance(10_000);
    expect(record.started).toEqual([]);
    await clock.advance(10_000);
    expect(record.started.length).toBe(1);
    expect(record.started[0]).toBeGreaterThanOrEqual(10_000 + 15_000);
    await e.stop();
  });

  it('stops leading within the renew deadline when it cannot reach the API server, before its Lease can expire for others', async () => {
    const api = new FakeLeaseApi();
    const clock = new FakeClock();
    const { e, record } = elector(api, clock);
    e.start();
    await clock.advance(4_000); // renewed at 0, 2 and 4 s
    api.unreachable = true;
    await clock.advance(20_000);
    expect(record.stopped).toEqual([14_000]); // the last renew started at 4 s, + 10 s deadline
    expect(record.stopped[0] - 4_000).toBeLessThan(15_000);
    await e.stop();
  });

  it('steps down as soon as it sees another holder, and releases its Lease on stop', async () => {
    const api = new FakeLeaseApi();
    const clock = new FakeClock();
    const { e, record } = elector(api, clock);
    e.start();
    await clock.advance(0);
    api.takenBy('b');
    await clock.advance(2_000);
    expect(record.stopped).toEqual([2_000]);

    const api2 = new FakeLeaseApi();
    const clock2 = new FakeClock();
    const second = elector(api2, clock2);
    second.e.start();
    await clock2.advance(0);
    await second.e.stop();
    expect(api2.holder).toBe('');
    expect(api2.lease.spec.leaseDurationSeconds).toBe(1);
    expect(clock2.pendingTimers).toBe(0);
  });

  it('with releaseOnStop false, stops leading on stop but leaves the Lease to expire, as a crashed process does', async () => {
    const api = new FakeLeaseApi();
    const clock = new FakeClock();
    const { e, record } = elector(api, clock, 'a', false);
    e.start();
    await clock.advance(0);
    const writes = api.writes.length;
    await e.stop();
    expect(record.stopped).toEqual([0]);
    expect(api.holder).toBe('a');
    expect(api.lease.spec.leaseDurationSeconds).toBe(15);
    expect(api.writes).toHaveLength(writes);
    expect(clock.pendingTimers).toBe(0);
  });
});
