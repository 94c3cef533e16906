// Slow: 3 and then 5 real members migrate from plain to TLS under load, one restart at a time (about 2.5 minutes).
/**
 * A running plain-HTTP cluster moved to TLS by the controller, on real etcd
 * 3.6 members (the test bed: the API server, kube-controller-manager, kwok's
 * nodes, each member run from its pod's generated arguments and mounted
 * Secrets, restarted when the controller deletes its pod), under a steady
 * client load and the invariant monitor. The spec says `tls.mode: operator`
 * on a 3- and a 5-member cluster that runs plain HTTP: the certificates are
 * issued, every member restarts with them (peer listener still plain, the
 * client port serving TLS beside plain HTTP), the clients move to https
 * during the grace period (6 s here), then member by member the peer URL is
 * switched to https and the member restarts with TLS only. Quorum is never
 * lost, never more than one member is down, every key written before is
 * there after, and plain HTTP is refused at the end. A second load's history
 * (put, get, delete, compare-and-swap through every member, moving to https
 * with the clients) is linearizable, checked by porcupine.
 */
import { loadDefaultConfig } from '../../api/config.js';
import type { GeneratorConfig } from '../../model/generator-config.js';
import { describeWithCluster, eventually } from '../cluster/kube.js';
import { LATER_BINARIES_BUILD_MS } from '../cluster/binaries.js';
import { clusterPath } from '../integration/controller-harness.js';
import { ClientLoad } from '../support/etcd-load.js';
import { expectLinearizable, HistoryRecorder } from '../support/linearizability.js';
import { countOrders, writeOrders } from '../support/etcd-members.js';
import { EtcdTestBed } from '../support/etcd-test-bed.js';
import { postJson } from '../../engines/etcd/etcd-http.js';

const NAME = 'kv';
const GRACE_SECONDS = 6;
const KEYS = 500;
const base = loadDefaultConfig();
const config: GeneratorConfig = { ...base, tls: { ...base.tls, plainClientGraceSeconds: GRACE_SECONDS } };

interface Observed { phases: string[]; membersDone: number[]; at: Record<string, number> }

async function migrate(size: number): Promise<void> {
  const bed = await EtcdTestBed.start({ config, name: NAME, label: `tls-migration-${size}`, maxMembers: size });
  const { client, namespace, cluster, kubelet } = bed;
  const pods = bed.pods;
  const status = async () => (await client.request('GET', clusterPath(namespace, NAME))).status ?? {};
  const monitor = bed.monitor();
  const load = new ClientLoad(cluster, pods);
  // Read at each call, as ClientLoad's: it moves to https when the clients do.
  const history = new HistoryRecorder(() => pods.map((p) => cluster.addressOf(p).clientUrl), { pauseMs: 60 });
  try {
    // A cluster created plain (as one created before TLS existed): its clients use plain HTTP.
    cluster.useClientScheme(false);
    await client.request('POST', clusterPath(namespace), {
      body: { apiVersion: 'example.com/v1beta1', kind: 'DistributedKV', metadata: { name: NAME, namespace }, spec: { size, image: 'registry.k8s.io/etcd:3.6.8-0', tls: { mode: 'disabled' } } },
    });
    await eventually(`${size} healthy plain members`, async () => {
      const s = await status();
      return s.members?.length === size && s.members.every((m: any) => m.healthy) && s.tls?.mode === 'disabled' ? s : undefined;
    }, 60_000, 200).catch(async (e: Error) => { throw new Error(`${e.message}\n${JSON.stringify(await status())}\nkubelet: ${kubelet.errors.join('; ')}`); });
    await writeOrders(cluster.addressOf(`${NAME}-0`).clientUrl, KEYS);
    monitor.start();
    load.start(100_000);
    history.start();

    const started = Date.now();
    await client.request('PATCH', clusterPath(namespace, NAME), { body: { spec: { tls: { mode: 'operator' } } }, contentType: 'application/merge-patch+json' });
    const observed: Observed = { phases: [], membersDone: [], at: {} };
    let clientsMovedAt: number | undefined;
    const done = await eventually('the migration to finish: TLS on both listeners, no migration in status, every peer URL https', async () => {
      const s = await status();
      const phase = s.tls?.migration?.phase;
      if (phase && observed.phases.at(-1) !== phase) {
        observed.phases.push(phase);
        observed.at[phase] = Date.now() - started;
      }
      if (phase === 'Switching' && observed.membersDone.at(-1) !== s.tls.migration.membersDone?.length) observed.membersDone.push(s.tls.migration.membersDone?.length ?? 0);
      // The clients move to https during their grace period (every member serves both then), as the docs ask.
      if ((phase === 'ClientGrace' || phase === 'Switching') && clientsMovedAt === undefined) {
        cluster.useClientScheme(true);
        clientsMovedAt = Date.now() - started;
      }
      if (phase || !s.tls?.peer || !s.tls?.client) return undefined;
      const members = (await bed.membership().status()).members;
      const tlsOnly = pods.every((p) => cluster.members.get(p)?.args.some((a) => a.startsWith('--listen-client-urls=https://') && !a.includes('http://')));
      return members.every((m) => m.peerUrls.every((u) => u.startsWith('https://'))) && members.every((m) => m.healthy) && tlsOnly ? s : undefined;
    }, 110_000, 200).catch(async (e: Error) => {
      const s = await status();
      const events = (await client.request('GET', `/api/v1/namespaces/${namespace}/events`)).items.map((v: any) => `${v.reason}: ${v.message}`);
      throw new Error(`${e.message}\nphases: ${JSON.stringify(observed)}\nstatus: ${JSON.stringify({ tls: s.tls, upgrade: s.upgrade, conditions: s.conditions })}\nevents: ${events.join('\n')}\nkubelet: ${kubelet.errors.join('; ')}`);
    });
    const migrationMs = Date.now() - started;
    await load.stop();
    await monitor.stop();
    await expectLinearizable(`the migration of ${size} members from plain HTTP to TLS`, history, cluster.addressOf(pods[0]).clientUrl);

    expect(observed.phases).toEqual(expect.arrayContaining(['Trusting', 'ClientGrace', 'Switching']));
    expect(observed.phases.indexOf('Trusting')).toBeLessThan(observed.phases.indexOf('ClientGrace'));
    expect(observed.phases.indexOf('ClientGrace')).toBeLessThan(observed.phases.indexOf('Switching'));
    // Member by member: the Switching phase was seen with some members done and others not.
    expect(observed.membersDone.some((n) => n > 0 && n < size)).toBe(true);
    expect(monitor.violations).toEqual([]);
    expect(monitor.maxDown()).toBeLessThanOrEqual(1);
    expect(kubelet.errors).toEqual([]);
    // Every key written on plain HTTP is there, read over TLS from every member.
    for (const pod of pods) expect(await countOrders(cluster.addressOf(pod).clientUrl)).toBe(KEYS);
    // Plain HTTP is gone from the client port.
    const plain = await postJson(`${cluster.addressOf(pods[0]).clientUrl.replace('https:', 'http:')}/v3/kv/range`, '{}', AbortSignal.timeout(3000)).then((a) => a.status, (e: Error) => e.message);
    expect(plain).not.toBe(200);
    expect(done.tls).toMatchObject({ mode: 'operator', peer: true, client: true });

    const failed = load.requests.filter((r) => r.error);
    const causes = new Map<string, number>();
    for (const r of failed) causes.set(`${r.pod} ${r.error!.replace(/127\.0\.0\.1:\d+/g, '…').slice(0, 70)}`, (causes.get(`${r.pod} ${r.error!.replace(/127\.0\.0\.1:\d+/g, '…').slice(0, 70)}`) ?? 0) + 1);
    console.log(`${size}-member migration to TLS: ${(migrationMs / 1000).toFixed(1)} s (grace ${GRACE_SECONDS} s included; phases at ${JSON.stringify(observed.at)} ms), `
      + `clients moved at ${clientsMovedAt} ms; ${load.requests.length} requests, ${failed.length} failed (requests to the member restarting); `
      + `longest election ${monitor.longestElectionMs} ms, max down ${monitor.maxDown()}; failures: ${JSON.stringify(Object.fromEntries(causes))}`);
  } finally {
    await load.stop();
    await history.stop(cluster.addressOf(pods[0]).clientUrl).catch(() => undefined);
    await monitor.stop();
    await bed.stop();
  }
}

describeWithCluster('migrating a running plain-HTTP cluster to TLS, member by member, on real etcd members', () => {
  it('moves 3 members under load: quorum kept, at most one member down, every key intact', () => migrate(3), 150_000 + LATER_BINARIES_BUILD_MS);
  it('moves 5 members under load: quorum kept, at most one member down, every key intact', () => migrate(5), 180_000 + LATER_BINARIES_BUILD_MS);
});
