/**
 * The fleet lock's order of events on a fake clock against an in-memory
 * Lease API (test/integration/fleet.test.ts runs real controllers on real
 * API servers): a member stands by before it competes, becomes active on
 * winning, fences (standby) when it cannot renew before the lock may move,
 * and on stop fences before it frees the lock, or leaves the lock to expire
 * when the fencing could not be written.
 */
import { FleetLock } from '../../reconciler/fleet/fleet-lock.js';
import { memberOf, standbyCondition, type FleetRole } from '../../reconciler/fleet/fleet-role.js';
import { silentLogger } from '../../kube/log.js';
import { FakeClock, settle } from '../support/fake-clock.js';
import { FakeLeaseApi } from '../support/fake-lease-api.js';

const TIMINGS = { leaseDurationMs: 30_000, renewDeadlineMs: 20_000, retryPeriodMs: 4_000 };

function member(api: FakeLeaseApi, clock: FakeClock, name: string, events: string[], options: { failFencing?: boolean } = {}) {
  const controller = {
    async setFleetRole(role: FleetRole): Promise<void> {
      events.push(`${name}:${role.role}${role.role === 'standby' && role.activeMember ? `(${role.activeMember})` : ''} holder=${api.holder ?? 'none'}`);
      if (role.role === 'standby' && options.failFencing) throw new Error('API server unreachable');
    },
  };
  return new FleetLock({ client: api, controller, member: name, identity: 'pod-0', namespace: 'dkv-fleet', name: 'dkv-fleet', ...TIMINGS, clock, log: silentLogger });
}

/** A member `primary`, started alone: it holds the lock. */
async function startedPrimary(options: { failFencing?: boolean } = {}) {
  const api = new FakeLeaseApi();
  const clock = new FakeClock();
  const events: string[] = [];
  const primary = member(api, clock, 'primary', events, options);
  await primary.start();
  await clock.advance(0);
  return { api, clock, events, primary };
}

describe('the fleet lock', () => {
  it('stands by first, then becomes active on winning the lock; the other member stands by naming it', async () => {
    const { api, clock, events, primary } = await startedPrimary();
    const standby = member(api, clock, 'standby', events);
    await standby.start();
    await clock.advance(TIMINGS.retryPeriodMs * 2);
    expect(events).toEqual([
      'primary:standby holder=none',
      'primary:active holder=primary/pod-0',
      'standby:standby holder=primary/pod-0',
      'standby:standby(primary) holder=primary/pod-0',
    ]);
    expect(primary.holding).toBe(true);
    expect(standby.holding).toBe(false);
    await standby.stop();
    await primary.stop();
  });

  it('fences (standby) as soon as it cannot renew, a lease margin before the other member may take the lock', async () => {
    const { api, clock, events, primary } = await startedPrimary();
    api.unreachable = true;
    const cutAt = clock.monotonic();
    let fencedAt: number | undefined;
    for (let t = 0; t < TIMINGS.leaseDurationMs && fencedAt === undefined; t += 500) {
      await clock.advance(500);
      if (events.at(-1)?.startsWith('primary:standby')) fencedAt = clock.monotonic();
    }
    expect(fencedAt! - cutAt).toBeLessThanOrEqual(TIMINGS.renewDeadlineMs);
    expect(fencedAt! - cutAt).toBeLessThan(TIMINGS.leaseDurationMs);
    api.unreachable = false;
    await primary.stop();
  });

  it('on stop, fences before it frees the lock, so the other member never takes it over an unfenced cluster', async () => {
    const { api, events, primary } = await startedPrimary();
    await primary.stop();
    await settle();
    // Fenced while the lock was still held, then released.
    expect(events.slice(0, 3)).toEqual(['primary:standby holder=none', 'primary:active holder=primary/pod-0', 'primary:standby holder=primary/pod-0']);
    expect(api.holder).toBe('');
  });

  it('leaves the lock to expire when its fencing could not be written', async () => {
    // The first standby fails too: nothing to fence yet, and it still competes.
    const { api, primary } = await startedPrimary({ failFencing: true });
    expect(api.holder).toBe('primary/pod-0');
    await primary.stop();
    expect(api.holder).toBe('primary/pod-0');
  });
});

describe('the Standby condition', () => {
  it('says who holds the lock, or that nobody is known to', () => {
    expect(memberOf('eu-west/dkv-controller-7c9')).toBe('eu-west');
    expect(memberOf('')).toBeUndefined();
    expect(standbyCondition({ role: 'active', member: 'eu-west' })).toMatchObject({ status: 'False', reason: 'Active' });
    expect(standbyCondition({ role: 'standby', member: 'us-east', activeMember: 'eu-west' })).toEqual({
      type: 'Standby', status: 'True', reason: 'ActiveElsewhere',
      message: 'Kubernetes cluster eu-west holds the fleet lock: backups and the definitions\' export run there, this cluster\'s (us-east) are suspended',
    });
    expect(standbyCondition({ role: 'standby', member: 'us-east' })).toMatchObject({ status: 'True', reason: 'LockNotHeld' });
  });
});
