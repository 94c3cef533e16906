/**
 * Client identities' certificates renew themselves (docs/client-identities.md
 * "Renewal"), on real etcd members with authentication on, under the
 * invariant monitor. The cluster is made by a controller whose clock runs
 * 70 days behind, so every certificate it issues is 70 days old by the
 * real clock: past two thirds of the default 90 days, still valid. A
 * controller on the real clock then takes over, as after a restart, and
 * renews them: the root identity's (its password kept) and each client's
 * (the same common name, so the same etcd user). The renewed certificates
 * open what the old ones opened; the old ones keep working for the grace
 * (clients.supersededGraceSeconds, 30 s here), then the members refuse them
 * (their CRL), while the controller goes on calling the members as root.
 */
import { createHash, X509Certificate } from 'node:crypto';
import { request as httpsRequest } from 'node:https';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { loadDefaultConfig } from '../../api/config.js';
import { EtcdMembership } from '../../engines/etcd/membership.js';
import { tlsAgent, type EtcdClientTls } from '../../engines/etcd/etcd-http.js';
import { postAs } from '../../engines/etcd/etcd-auth.js';
import { streamEtcdSnapshot } from '../../engines/etcd/snapshot.js';
import { realClock, type Clock } from '../../kube/clock.js';
import { describeWithCluster, eventually } from '../cluster/kube.js';
import { LATER_BINARIES_BUILD_MS } from '../cluster/binaries.js';
import { clusterPath, createCluster } from '../integration/controller-harness.js';
import { apiServerSecrets, memberClientTls, mountedIdentity } from '../support/etcd-members.js';
import { EtcdGrpcClient } from '../support/etcd-grpc.js';
import { EtcdTestBed } from '../support/etcd-test-bed.js';
import { InvariantMonitor } from '../support/invariant-monitor.js';

const GRACE_SECONDS = 30;
const defaults = loadDefaultConfig();
const config = { ...defaults, clients: { ...defaults.clients, supersededGraceSeconds: GRACE_SECONDS } };
const NAME = 'kv';
const IMAGE = 'registry.k8s.io/etcd:3.6.8-0';
const ORDERS = { name: 'orders', prefix: '/orders/', access: 'readWrite' };
const DAY_MS = 86_400_000;
/** A clock 70 days behind the real one (timers and intervals are the real clock's). */
const behind: Clock = { ...realClock, now: () => Date.now() - 70 * DAY_MS };

describeWithCluster('client identities\' certificates renewed on real etcd members', () => {
  let bed: EtcdTestBed;
  let monitor: InvariantMonitor | undefined;
  const grpc: EtcdGrpcClient[] = [];
  const dir = mkdtempSync(join(tmpdir(), 'dkv-client-renewal-'));

  beforeAll(async () => {
    bed = await EtcdTestBed.start({ config, name: NAME, label: 'renewal', maxMembers: 3, clock: behind, secretSyncMs: 1000 });
  }, 180_000 + LATER_BINARIES_BUILD_MS);

  afterAll(async () => {
    for (const c of grpc) c.close();
    await monitor?.stop();
    await bed?.stop();
    rmSync(dir, { recursive: true, force: true });
  });

  it('renews the root identity\'s and a client\'s certificate once due: the same user, the old one still valid, the controller\'s calls and the backup runner\'s snapshot as root unbroken', async () => {
    const { client, namespace } = bed;
    const secret = (name: string) => apiServerSecrets(client, namespace)(name);
    const identity = (data: Record<string, string>): EtcdClientTls => ({ ca: data['ca.crt'], cert: data['tls.crt'], key: data['tls.key'] });
    /** The root identity as the backup runner loads it: the mounted Secret's files. */
    const rootFromMount = () => mountedIdentity(secret, `${NAME}-etcd-root`, dir);
    const url = (pod = `${NAME}-0`) => bed.cluster.addressOf(pod).clientUrl;
    const authEnabled = async (root: EtcdClientTls) => {
      const answer = await postAs(url() + '/v3/auth/status', '{}', AbortSignal.timeout(5000), tlsAgent(root), root);
      return answer.status === 200 && JSON.parse(answer.text).enabled === true;
    };
    /** A new TLS connection with this certificate: `answered` (/version needs no user) or `refused` (etcd checks its CRL on every connection). */
    const connectionWith = (tls: EtcdClientTls) => new Promise<'answered' | 'refused'>((resolve) => {
      const req = httpsRequest(`${url()}/version`, { ca: tls.ca, cert: tls.cert, key: tls.key, agent: false, timeout: 5000 }, (res) => {
        res.resume();
        resolve('answered');
      });
      req.on('timeout', () => req.destroy(new Error('timed out')));
      req.on('error', () => resolve('refused'));
      req.end();
    });
    const grpcAs = (tls: EtcdClientTls) => {
      const c = new EtcdGrpcClient(url(`${NAME}-1`), tls);
      grpc.push(c);
      return c;
    };

    await createCluster(client, namespace, NAME, { size: 3, image: IMAGE, clients: [ORDERS] });
    const asMembers = new EtcdMembership(() => bed.pods, (pod) => url(pod), 1000, undefined, memberClientTls(bed.cluster));
    let root: EtcdClientTls | undefined;
    // 3 s, not 1: a reading as root authenticates again (a bcrypt hash on each member) whenever its token goes stale, as
    // when adding a client below bumps the auth revision, and on two loaded cores that alone has taken over a second.
    const asRoot = new EtcdMembership(() => bed.pods, (pod) => url(pod), 3000, undefined, () => root);
    // Read as the controller reads: with the members' certificate until the root identity exists (authentication is off until then), as root after.
    monitor = new InvariantMonitor({
      status: async () => {
        root ??= await rootFromMount();
        return (root ? asRoot : asMembers).status();
      },
    });
    await eventually('3 members', async () => ((await asMembers.status().catch(() => undefined))?.healthyVoters === 3 ? true : undefined), 90_000, 200);
    monitor.start();
    await eventually('authentication on', async () => {
      root ??= await rootFromMount();
      return root && (await authEnabled(root).catch(() => false)) ? true : undefined;
    }, 60_000, 200);

    const oldRoot = (await secret(`${NAME}-etcd-root`))!;
    // A client's Secret follows authentication: it is issued once etcd enforces the client's access.
    const oldOrders = await eventually('orders\' Secret', () => secret(`${NAME}-client-orders`), 30_000, 100);
    const issuedAt = Date.parse(new X509Certificate(oldOrders['tls.crt']).validFrom);
    expect(Date.now() - issuedAt).toBeGreaterThan(69 * DAY_MS); // issued by the clock 70 days behind
    const ordersBefore = grpcAs(identity(oldOrders));
    await ordersBefore.put('/orders/1', 'paid');

    // A controller on the real clock takes over: every certificate it finds is past two thirds of its validity.
    const readingsBefore = monitor.readings.length;
    await bed.controller!.stop();
    await bed.startController(realClock);
    const renewed = await eventually('root\'s and orders\' certificates renewed', async () => {
      const [r, o] = [(await secret(`${NAME}-etcd-root`))!, (await secret(`${NAME}-client-orders`))!];
      return r['tls.crt'] !== oldRoot['tls.crt'] && o['tls.crt'] !== oldOrders['tls.crt'] ? { root: r, orders: o } : undefined;
    }, 60_000, 200);
    for (const [before, after] of [[oldRoot, renewed.root], [oldOrders, renewed.orders]]) {
      const [b, a] = [new X509Certificate(before['tls.crt']), new X509Certificate(after['tls.crt'])];
      expect(a.subject).toBe(b.subject);
      expect(Math.abs(Date.parse(a.validFrom) - Date.now())).toBeLessThan(10 * 60_000);
      expect(a.checkIssued(new X509Certificate(after['ca.crt']))).toBe(true);
    }
    expect(renewed.root).toMatchObject({ username: 'root', password: oldRoot.password });

    // The monitor reads as root with the renewed certificate from now on, as the controller does from its cache.
    root = await rootFromMount();
    expect(root!.cert).toBe(renewed.root['tls.crt']);

    // The renewed client certificate is the same etcd user; the one it replaces still opens the same during the grace.
    const ordersAfter = grpcAs(identity(renewed.orders));
    expect(await ordersAfter.range('/orders/', true)).toEqual([{ key: '/orders/1', value: 'paid' }]);
    await ordersAfter.put('/orders/2', 'renewed');
    await expect(ordersAfter.put('/billing/1', 'not its prefix')).rejects.toThrow(/permission denied/);
    expect(await ordersBefore.range('/orders/', true)).toHaveLength(2);
    // When the controller issued the renewals, by its own record: the ledger in the CA Secret, written before each Secret.
    const ledger = (await secret(`${NAME}-tls-ca`))!['client-serials'];
    const issuedAtOf = (data: Record<string, string>) => {
      const serial = new X509Certificate(data['tls.crt']).serialNumber.toUpperCase();
      return Date.parse(ledger.split('\n').find((l) => l.split(' ')[1] === serial)!.split(' ')[3]);
    };

    // Once the grace is over, the members refuse the old certificates outright (their CRL), the renewed ones still connect;
    // not before: each is first seen refused no earlier than the grace after its renewal (watched side by side).
    await Promise.all(([['orders', oldOrders, renewed.orders], ['root', oldRoot, renewed.root]] as const).map(async ([who, before, after]) => {
      await eventually(`${who}'s old certificate refused`, async () => ((await connectionWith(identity(before))) === 'refused' ? true : undefined), (GRACE_SECONDS + 60) * 1000, 500);
      expect(Date.now() - issuedAtOf(after)).toBeGreaterThanOrEqual(GRACE_SECONDS * 1000);
      expect(await connectionWith(identity(after))).toBe('answered');
    }));
    expect((await bed.events('CertificateRevoked')).some((m) => m.includes('replaced by renewal, its grace over'))).toBe(true);

    // The controller's calls as root with the renewed certificate: the membership behind status of a new generation.
    const changed = await client.request('PATCH', clusterPath(namespace, NAME), { body: { metadata: { labels: { poke: 'after-renewal' } }, spec: { clients: [ORDERS, { name: 'billing', prefix: '/billing/' }] } }, contentType: 'application/merge-patch+json' });
    await eventually('status of the new generation, every member healthy', async () => {
      const cr = await client.request('GET', clusterPath(namespace, NAME));
      const members = cr.status?.members ?? [];
      return cr.status?.observedGeneration === changed.metadata.generation && members.length === 3 && members.every((m: any) => m.healthy) ? cr : undefined;
    }, 30_000, 200);
    // The backup runner's snapshot, as root from the renewed mount.
    const chunks: Buffer[] = [];
    await streamEtcdSnapshot(url(), (c) => { chunks.push(Buffer.from(c)); }, AbortSignal.timeout(30_000), root);
    const snapshot = Buffer.concat(chunks);
    expect(createHash('sha256').update(snapshot.subarray(0, -32)).digest().equals(snapshot.subarray(-32))).toBe(true);

    expect((await bed.events('CertificateRotation')).some((m) => m.includes(`renewed the client certificate in Secret ${NAME}-etcd-root, ${NAME}-client-orders`))).toBe(true);
    expect(await bed.events('ClientIdentityProblem')).toEqual([]);
    // The monitor read the members throughout the renewal, not only before it.
    await eventually('five readings since the restart', async () => (monitor!.readings.length >= readingsBefore + 5 ? true : undefined), 30_000, 200);
    await monitor.stop();
    expect(monitor.violations).toEqual([]);
  }, 240_000);
});
