/**
 * Leader election against a real kube-apiserver: at most one replica leads,
 * a released Lease is taken over at once, one left held (a crash) only after it
 * expires, and a leader that cannot renew stops leading before anyone else
 * may start. Durations are scaled down (lease 3 s, renew 2 s, retry 250 ms).
 */
import { KubeClient, resourcePath } from '../../kube/client.js';
import { LeaderElector, type LeaderElectionOptions } from '../../kube/leader.js';
import { createNamespace, describeWithCluster, eventually, testClient } from '../cluster/kube.js';
import { viaServer } from '../support/connections.js';
import { startLoopbackProxy } from '../cluster/loopback-proxy.js';
import { recordingLogger, type LogRecord } from '../support/recording-logger.js';

const LEASE = 3000;
const RENEW = 2000;
const RETRY = 250;
const LEASE_NAME = 'dkv-controller';

/** An elector plus a record of when (wall clock, ms) its callbacks ran. */
interface Replica {
  readonly identity: string;
  readonly elector: LeaderElector;
  readonly started: number[];
  readonly stopped: number[];
  readonly events: string[];
  readonly logs: LogRecord[];
}

describeWithCluster('leader election', () => {
  let client: KubeClient;
  let namespace: string;
  let replicas: Replica[] = [];
  /** How many replicas are between onStartedLeading and onStoppedLeading, now and at most. */
  let leadingNow = 0;
  let mostLeadingAtOnce = 0;

  beforeAll(() => {
    client = testClient(); // jest fails the running test on any unhandled rejection, so none can slip by
  });
  beforeEach(async () => {
    namespace = await createNamespace(client, 'leader');
    replicas = [];
    leadingNow = mostLeadingAtOnce = 0;
  });
  afterEach(async () => {
    await Promise.all(replicas.map((r) => r.elector.stop()));
  });
  afterAll(() => client?.close());

  function replica(identity: string, options: Partial<LeaderElectionOptions> = {}): Replica {
    const started: number[] = [];
    const stopped: number[] = [];
    const logs: Replica['logs'] = [];
    const elector = new LeaderElector({
      client, namespace, name: LEASE_NAME, identity,
      leaseDurationMs: LEASE, renewDeadlineMs: RENEW, retryPeriodMs: RETRY,
      onStartedLeading: () => {
        started.push(Date.now());
        mostLeadingAtOnce = Math.max(mostLeadingAtOnce, ++leadingNow);
      },
      onStoppedLeading: () => {
        stopped.push(Date.now());
        leadingNow--;
      },
      log: recordingLogger(logs),
      ...options,
    });
    const r: Replica = { identity, elector, started, stopped, logs, get events() { return logs.map((l) => l.message); } };
    replicas.push(r);
    elector.start();
    return r;
  }

  const leasePath = () => resourcePath('coordination.k8s.io/v1', 'Lease', namespace, LEASE_NAME);
  const readLease = () => client.request('GET', leasePath());
  const leaderOf = (rs: Replica[]) => eventually('a leader', async () => rs.find((r) => r.elector.isLeader()));
  const wallMillis = (microTime: string) => Date.parse(microTime.replace(/(\.\d{3})\d*Z$/, '$1Z'));

  it('elects exactly one of two replicas and names it in the Lease', async () => {
    const rs = [replica('a'), replica('b')];
    const leader = await leaderOf(rs);
    const other = rs.find((r) => r !== leader)!;
    expect(other.elector.isLeader()).toBe(false);
    expect(other.started).toEqual([]);
    const lease = await readLease();
    expect(lease.spec).toMatchObject({ holderIdentity: leader.identity, leaseDurationSeconds: LEASE / 1000, leaseTransitions: 0 });
    expect(lease.spec.renewTime).toMatch(/^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{6}Z$/);
    expect(lease.spec.acquireTime).toMatch(/^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{6}Z$/);
    // The leader keeps renewing: renewTime moves while acquireTime stays.
    const renewed = await eventually('a renew', async () => {
      const next = await readLease();
      return next.spec.renewTime !== lease.spec.renewTime ? next : undefined;
    });
    expect(renewed.spec).toMatchObject({ holderIdentity: leader.identity, acquireTime: lease.spec.acquireTime });
  });

  it('never lets two replicas lead at once, even across a hand-over', async () => {
    const rs = [replica('a'), replica('b'), replica('c')];
    const first = await leaderOf(rs);
    const samples: number[] = [];
    const sample = async (ms: number) => {
      for (const until = Date.now() + ms; Date.now() < until; await new Promise((r) => setTimeout(r, 50))) {
        samples.push(rs.filter((r) => r.elector.isLeader()).length);
      }
    };
    await sample(1500);
    await first.elector.stop();
    await sample(2000);
    expect(Math.max(...samples)).toBe(1);
    expect(mostLeadingAtOnce).toBe(1);
    expect(samples.filter((n) => n === 1).length).toBeGreaterThan(samples.length / 2);
    expect(rs.filter((r) => r !== first && r.elector.isLeader())).toHaveLength(1);
  });

  it('hands over well within the lease duration when the leader stops and releases the Lease', async () => {
    const rs = [replica('a'), replica('b')];
    const leader = await leaderOf(rs);
    const successor = rs.find((r) => r !== leader)!;
    const stoppedAt = Date.now();
    await leader.elector.stop();
    expect(leader.elector.isLeader()).toBe(false);
    expect(leader.stopped).toHaveLength(1);
    expect(leader.events).toContain('leader.released');
    await eventually('the successor to lead', async () => successor.started[0]);
    expect(successor.started[0] - stoppedAt).toBeLessThan(LEASE / 2);
    expect((await readLease()).spec).toMatchObject({ holderIdentity: successor.identity, leaseTransitions: 1 });
  });

  it('takes over from a crashed leader only after the lease duration has passed', async () => {
    // releaseOnStop: false: a stopped leader leaves its Lease as a crashed process does.
    const rs = [replica('a', { releaseOnStop: false }), replica('b', { releaseOnStop: false })];
    const leader = await leaderOf(rs);
    const successor = rs.find((r) => r !== leader)!;
    await leader.elector.stop();
    const lastRenew = wallMillis((await readLease()).spec.renewTime);
    expect(leader.events).not.toContain('leader.released');
    const takeover = await eventually('the successor to lead', async () => successor.started[0], LEASE * 3);
    // The successor's clock started when it SAW the last renew, which is after the leader wrote it.
    expect(takeover - lastRenew).toBeGreaterThanOrEqual(LEASE - 20);
    expect(takeover - lastRenew).toBeLessThanOrEqual(LEASE + 6 * RETRY);
    expect((await readLease()).spec.holderIdentity).toBe(successor.identity);
  });

  it('stops leading when someone else overwrites the Lease, and leads again only after that holder lets it expire', async () => {
    const leader = replica('a');
    await leaderOf([leader]);
    const lease = await readLease();
    const now = new Date().toISOString().replace('Z', '000Z');
    await client.request('PUT', leasePath(), { body: { ...lease, spec: { ...lease.spec, holderIdentity: 'intruder', renewTime: now, acquireTime: now } } });
    const overwrittenAt = Date.now();
    await eventually('the leader to step down', async () => leader.stopped[0], RENEW + 2 * RETRY);
    expect(leader.elector.isLeader()).toBe(false);
    expect(leader.stopped[0] - overwrittenAt).toBeLessThanOrEqual(RENEW + RETRY);
    // Back to candidate: the intruder never renews, so its Lease expires and the replica takes it back.
    await eventually('the replica to lead again', async () => leader.started[1], LEASE * 3);
    expect(leader.started[1] - overwrittenAt).toBeGreaterThanOrEqual(LEASE - 20);
    expect(leader.stopped).toHaveLength(1);
    // The intruder wrote no transition of its own; taking the Lease back counts one.
    expect((await readLease()).spec).toMatchObject({ holderIdentity: 'a', leaseTransitions: 1 });
  });

  it('stops leading when the Lease is deleted and recreated by another holder', async () => {
    const leader = replica('a');
    await leaderOf([leader]);
    await client.request('DELETE', leasePath());
    const now = new Date().toISOString().replace('Z', '000Z');
    await client.request('POST', resourcePath('coordination.k8s.io/v1', 'Lease', namespace), {
      body: { apiVersion: 'coordination.k8s.io/v1', kind: 'Lease', metadata: { name: LEASE_NAME, namespace }, spec: { holderIdentity: 'other', leaseDurationSeconds: 60, renewTime: now, acquireTime: now } },
    });
    const recreatedAt = Date.now();
    await eventually('the leader to step down', async () => leader.stopped[0], RENEW + 2 * RETRY);
    expect(leader.stopped[0] - recreatedAt).toBeLessThanOrEqual(RENEW + RETRY);
    expect(leader.elector.isLeader()).toBe(false);
    expect((await readLease()).spec.holderIdentity).toBe('other');
  });

  it('stops leading before the Lease can expire when it cannot reach the API server', async () => {
    const proxy = await startLoopbackProxy(client.server);
    const cut = viaServer(client, proxy.url);
    try {
      const leader = replica('cut-off', { client: cut });
      await leaderOf([leader]);
      const standby = replica('standby');
      proxy.partitioned = true;
      const lastRenew = wallMillis((await readLease()).spec.renewTime);
      await eventually('the cut-off leader to step down', async () => leader.stopped[0], RENEW + 4 * RETRY);
      expect(leader.stopped[0] - lastRenew).toBeLessThanOrEqual(RENEW + RETRY);
      const takeover = await eventually('the standby to lead', async () => standby.started[0], LEASE * 3);
      expect(takeover).toBeGreaterThan(leader.stopped[0]);
      expect(takeover - lastRenew).toBeGreaterThanOrEqual(LEASE - 20);
      // When the network heals, the old leader finds the new holder and stays a candidate.
      proxy.partitioned = false;
      await eventually('the old leader to see the new holder', async () => (leader.logs.some((l) => l.message === 'leader.holder-changed' && l.fields.holder === 'standby') ? true : undefined), LEASE * 3);
      expect(leader.elector.isLeader()).toBe(false);
      await leader.elector.stop();
      expect(leader.stopped).toHaveLength(1);
    } finally {
      await Promise.all(replicas.map((r) => r.elector.stop()));
      cut.close();
      await proxy.close();
    }
  });

  it('makes no request after stop: its loop and timers end with it', async () => {
    // Counted by behaviour, not by the process's timers, which other work shares.
    let requests = 0;
    const counting: KubeClient = Object.assign(Object.create(client), {
      request: (...args: Parameters<KubeClient['request']>) => {
        requests++;
        return client.request(...args);
      },
    });
    const rs = [replica('a', { client: counting }), replica('b', { client: counting })];
    await leaderOf(rs);
    await eventually('both loops to have polled', async () => (requests > 4 ? true : undefined));
    await Promise.all(rs.map((r) => r.elector.stop()));
    const afterStop = requests;
    await new Promise((resolve) => setTimeout(resolve, RETRY * 6)); // measuring absence: six retry periods
    expect(requests).toBe(afterStop);
  });
});
