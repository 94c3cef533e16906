/**
 * Client identities on real etcd members (docs/client-identities.md): the
 * controller in-process on a test control plane, the members started from
 * the generated arguments with the Secrets it issued (EtcdTestBed), under
 * the invariant monitor. Applications reach the members as they would in a
 * cluster, over gRPC with their own certificate (test/support/etcd-grpc.ts):
 * each reads and writes its prefix and nothing else, a read-only one only
 * reads, and a removed one is refused: by etcd's authentication, and by TLS
 * itself once the members' CRL lists its certificate (any authenticated
 * certificate may compact and grant leases). The controller's own calls (the
 * membership behind status, the auth calls of the next change) and the
 * backup runner's snapshot keep working with authentication on, as root.
 * No client's certificate exists before etcd enforces what it may do.
 */
import { createHash } from 'node:crypto';
import { request as httpsRequest } from 'node:https';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { loadDefaultConfig } from '../../api/config.js';
import { EtcdMembership } from '../../engines/etcd/membership.js';
import { tlsAgent, type EtcdClientTls } from '../../engines/etcd/etcd-http.js';
import { postAs } from '../../engines/etcd/etcd-auth.js';
import { streamEtcdSnapshot } from '../../engines/etcd/snapshot.js';
import type { KubeClient } from '../../kube/client.js';
import { describeWithCluster, eventually } from '../cluster/kube.js';
import { LATER_BINARIES_BUILD_MS } from '../cluster/binaries.js';
import { clusterPath, createCluster } from '../integration/controller-harness.js';
import { apiServerSecrets, issuedClientTls, memberClientTls, mountedIdentity } from '../support/etcd-members.js';
import { EtcdGrpcClient, GrpcError } from '../support/etcd-grpc.js';
import { EtcdTestBed } from '../support/etcd-test-bed.js';
import { InvariantMonitor } from '../support/invariant-monitor.js';

const config = loadDefaultConfig();
const NAME = 'kv';
const IMAGE = 'registry.k8s.io/etcd:3.6.8-0';
const ORDERS = { name: 'orders', prefix: '/orders/', access: 'readWrite' };
const REPORTS = { name: 'reports', prefix: '/reports/', access: 'read' };
const BILLING = { name: 'billing', prefix: '/billing/' };
const b64 = (s: string) => Buffer.from(s).toString('base64');
const DENIED = /permission denied|user name not found/;

describeWithCluster('client identities on real etcd members', () => {
  let bed: EtcdTestBed;
  let client: KubeClient;
  let namespace: string;
  let monitor: InvariantMonitor;
  let root: EtcdClientTls | undefined;
  const grpc: EtcdGrpcClient[] = [];
  const dir = mkdtempSync(join(tmpdir(), 'dkv-client-identities-'));

  const secret = (name: string) => apiServerSecrets(client, namespace)(name);
  const identityOf = async (name: string): Promise<EtcdClientTls | undefined> => {
    const data = await secret(name);
    return data && { ca: data['ca.crt'], cert: data['tls.crt'], key: data['tls.key'] };
  };
  /** The root identity as the backup runner loads it: the mounted Secret's files (clientTlsFromDirectory). */
  const rootFromMount = () => mountedIdentity(secret, `${NAME}-etcd-root`, dir);
  const url = (pod = `${NAME}-0`) => bed.cluster.addressOf(pod).clientUrl;
  const asRoot = async (path: string, body: unknown) => {
    const answer = await postAs(url() + path, JSON.stringify(body), AbortSignal.timeout(5000), tlsAgent(root!), root);
    if (answer.status !== 200) throw new Error(`${path}: ${answer.status} ${answer.text}`);
    return JSON.parse(answer.text);
  };
  const grpcAs = (identity: EtcdClientTls) => {
    const c = new EtcdGrpcClient(url(`${NAME}-1`), identity);
    grpc.push(c);
    return c;
  };
  /**
   * What a member does with a new TLS connection made with this certificate: `answered` (any HTTP answer, /version
   * needs no user) or `refused` (closed before any answer: etcd checks its CRL on every connection it accepts).
   */
  const connectionWith = (identity: EtcdClientTls, pod = `${NAME}-0`) => new Promise<'answered' | 'refused'>((resolve) => {
    const req = httpsRequest(`${url(pod)}/version`, { ca: identity.ca, cert: identity.cert, key: identity.key, agent: false, timeout: 5000 }, (res) => {
      res.resume();
      resolve('answered');
    });
    req.on('timeout', () => req.destroy(new Error('timed out')));
    req.on('error', () => resolve('refused'));
    req.end();
  });
  const users = async (): Promise<string[]> => ((await asRoot('/v3/auth/user/list', {})).users ?? []).sort();
  const patchClients = (clients: unknown[]) => client.request('PATCH', clusterPath(namespace, NAME), { body: { spec: { clients } }, contentType: 'application/merge-patch+json' });

  beforeAll(async () => {
    // The members' mounted Secret follows the Secret, as a kubelet's sync does: how a revocation (the CRL) reaches them.
    bed = await EtcdTestBed.start({ config, name: NAME, label: 'identities', maxMembers: 3, secretSyncMs: 1000 });
    ({ client, namespace } = bed);
  }, 180_000 + LATER_BINARIES_BUILD_MS);

  afterAll(async () => {
    for (const c of grpc) c.close();
    await monitor?.stop();
    await bed?.stop();
    rmSync(dir, { recursive: true, force: true });
  });

  /**
   * From the moment the cluster is asked for: each client Secret, as soon as it appears, is used at once to read
   * outside its prefix, retried while no member answers. A Secret issued before etcd enforces its access (before
   * authentication is on) reads everything: what each probe got, by Secret.
   */
  const probeClientSecretsAsTheyAppear = (stop: AbortSignal) => {
    const outcomes = new Map<string, Promise<'read' | 'denied' | 'unanswered'>>();
    let stopped = false;
    const loop = (async () => {
      // One whole pass after the stop: every Secret that existed when the test stopped the probing is probed (a loaded
      // run once stopped it between the second Secret's creation and the loop's next listing).
      for (;;) {
        const last = stop.aborted;
        const items = (await client.request('GET', `/api/v1/namespaces/${namespace}/secrets`).catch(() => undefined))?.items as any[] | undefined;
        if (last && items) stopped = true;
        for (const s of (items ?? []).filter((x) => x.metadata.labels?.['dkv.example.com/client'] && !outcomes.has(x.metadata.name))) {
          const identity = (await identityOf(s.metadata.name))!;
          const app = grpcAs(identity);
          outcomes.set(s.metadata.name, (async () => {
            const deadline = Date.now() + 60_000;
            while (Date.now() < deadline) {
              const got = await app.range('/', true).then(() => 'read' as const, (e: Error) => (DENIED.test(e.message) ? 'denied' as const : undefined));
              if (got) return got;
              await new Promise((r) => setTimeout(r, 100));
            }
            return 'unanswered' as const;
          })());
        }
        if (stopped) return;
        await new Promise((r) => setTimeout(r, 50));
      }
    })();
    return async () => {
      await loop;
      return Object.fromEntries(await Promise.all([...outcomes].map(async ([name, outcome]) => [name, await outcome] as const)));
    };
  };

  it('gives each client its prefix and nothing else, revokes a removed one, and keeps the controller\'s and the backup runner\'s calls working as root', async () => {
    const stopProbing = new AbortController();
    const probed = probeClientSecretsAsTheyAppear(stopProbing.signal);
    await createCluster(client, namespace, NAME, { size: 3, image: IMAGE, clients: [ORDERS, REPORTS] });
    // The monitor reads the membership as the controller does: with the members' certificate until the
    // root identity exists (authentication is off until then), as root after.
    const asMembers = new EtcdMembership(() => bed.pods, (pod) => bed.cluster.addressOf(pod).clientUrl, 1000, undefined, memberClientTls(bed.cluster));
    const asRootMembership = new EtcdMembership(() => bed.pods, (pod) => bed.cluster.addressOf(pod).clientUrl, 1000, undefined, () => root);
    const status = async () => {
      root ??= await rootFromMount();
      return (root ? asRootMembership : asMembers).status();
    };
    monitor = new InvariantMonitor({ status });
    // As the monitor reads: the controller turns authentication on as soon as the 3 members are healthy, and a
    // call with the members' certificate is refused from then on (a loaded CI run missed the window between).
    await eventually('3 members', async () => ((await status().catch(() => undefined))?.healthyVoters === 3 ? true : undefined), 90_000, 200);
    monitor.start();

    await eventually('authentication on', async () => {
      root ??= await rootFromMount();
      return root && (await asRoot('/v3/auth/status', {})).enabled ? true : undefined;
    }, 60_000, 200);
    expect(await users()).toEqual(['orders', 'reports', 'root']);
    await eventually('both client Secrets', async () => ((await secret(`${NAME}-client-orders`)) && (await secret(`${NAME}-client-reports`)) ? true : undefined), 30_000, 100);
    stopProbing.abort();
    // Not one certificate opened the whole keyspace, at any moment: each was issued only once etcd enforced its access.
    expect(await probed()).toEqual({ [`${NAME}-client-orders`]: 'denied', [`${NAME}-client-reports`]: 'denied' });
    // The root identity names no one (etcd's gateway refuses a certificate with a common name once authentication is on).
    expect(root!.login?.user).toBe('root');
    const orders = (await identityOf(`${NAME}-client-orders`))!;
    const reports = (await identityOf(`${NAME}-client-reports`))!;
    const secrets = (await client.request('GET', `/api/v1/namespaces/${namespace}/secrets`)).items;
    const ordersSecret = secrets.find((s: any) => s.metadata.name === `${NAME}-client-orders`);
    expect(ordersSecret.type).toBe('kubernetes.io/tls');
    expect(ordersSecret.metadata.labels).toMatchObject({ 'app.kubernetes.io/instance': NAME, 'dkv.example.com/client': 'orders' });

    // orders: reads and writes /orders/, nothing else.
    const ordersApp = grpcAs(orders);
    await ordersApp.put('/orders/1', 'paid');
    expect(await ordersApp.range('/orders/', true)).toEqual([{ key: '/orders/1', value: 'paid' }]);
    await expect(ordersApp.put('/reports/1', 'forged')).rejects.toThrow(DENIED);
    await expect(ordersApp.range('/reports/', true)).rejects.toThrow(DENIED);
    await expect(ordersApp.put('/ordersX', 'next to the prefix')).rejects.toThrow(DENIED);
    // reports: reads /reports/ (written here as root), cannot write it.
    await asRoot('/v3/kv/put', { key: b64('/reports/q3'), value: b64('fine') });
    const reportsApp = grpcAs(reports);
    expect(await reportsApp.range('/reports/', true)).toEqual([{ key: '/reports/q3', value: 'fine' }]);
    await expect(reportsApp.put('/reports/q4', 'made up')).rejects.toThrow(DENIED);
    await expect(reportsApp.range('/orders/', true)).rejects.toThrow(GrpcError);
    // The former client certificate (common name dkv-operator) opens nothing any more.
    await expect(grpcAs(await issuedClientTls(client, namespace, NAME)).range('/orders/', true)).rejects.toThrow(DENIED);

    // The controller's own calls as root: the next change's auth calls, and the membership behind status.
    const changed = await patchClients([ORDERS, REPORTS, BILLING]);
    await eventually('billing added', async () => ((await users()).includes('billing') ? true : undefined), 30_000, 200);
    await eventually('status of the new generation, every member healthy', async () => {
      const cr = await client.request('GET', clusterPath(namespace, NAME));
      const members = cr.status?.members ?? [];
      return cr.status?.observedGeneration === changed.metadata.generation && members.length === 3 && members.every((m: any) => m.healthy) ? cr : undefined;
    }, 30_000, 200);

    // The backup runner's snapshot, as root from the mounted Secret; the former client certificate is refused it.
    const chunks: Buffer[] = [];
    await streamEtcdSnapshot(url(), (c) => { chunks.push(Buffer.from(c)); }, AbortSignal.timeout(30_000), await rootFromMount());
    const snapshot = Buffer.concat(chunks);
    expect(snapshot.length).toBeGreaterThan(32);
    expect(createHash('sha256').update(snapshot.subarray(0, -32)).digest().equals(snapshot.subarray(-32))).toBe(true);
    await expect(streamEtcdSnapshot(url(), () => undefined, AbortSignal.timeout(10_000), await issuedClientTls(client, namespace, NAME))).rejects.toThrow();

    // Removing orders revokes it: its user and role go, then its Secret; its certificate opens nothing.
    await patchClients([REPORTS, BILLING]);
    await eventually('orders\' Secret deleted', async () => ((await secret(`${NAME}-client-orders`)) === undefined ? true : undefined), 30_000, 200);
    expect(await users()).toEqual(['billing', 'reports', 'root']);
    // (root's role is etcd's own: granted, never added as a role of the store.)
    expect(((await asRoot('/v3/auth/role/list', {})).roles ?? []).sort()).toEqual(['billing', 'reports']);
    await expect(grpcAs(orders).range('/orders/', true)).rejects.toThrow(GrpcError);
    await expect(grpcAs(orders).put('/orders/2', 'after removal')).rejects.toThrow(GrpcError);
    expect(await grpcAs(reports).range('/reports/', true)).toHaveLength(1);
    // ... and TLS refuses its certificate outright, on every member, once the members' CRL lists it; the others still connect.
    for (const pod of bed.pods) {
      await eventually(`orders' certificate refused by ${pod}`, async () => ((await connectionWith(orders, pod)) === 'refused' ? true : undefined), 30_000, 200);
      expect(await connectionWith(reports, pod)).toBe('answered');
    }
    expect((await bed.events('CertificateRevoked')).some((m) => m.includes('orders\'s certificate') && m.includes('no longer in spec.clients'))).toBe(true);

    // Settled: a reconcile (the annotation below asks for one) changes nothing in etcd's auth store and writes nothing to Kubernetes.
    const settledRevision = (await asRoot('/v3/auth/status', {})).authRevision;
    const writesBefore = bed.controllerWrites.length;
    await client.request('PATCH', clusterPath(namespace, NAME), { body: { metadata: { annotations: { poke: 'steady' } } }, contentType: 'application/merge-patch+json' });
    await new Promise((r) => setTimeout(r, 3000));
    expect((await asRoot('/v3/auth/status', {})).authRevision).toBe(settledRevision);
    expect(bed.controllerWrites.slice(writesBefore)).toEqual([]);
    // The normal course (Secrets issued, read back, authentication on, a client added and removed) is no problem to report.
    expect(await bed.events('ClientIdentityProblem')).toEqual([]);

    await monitor.stop();
    expect(monitor.violations).toEqual([]);
    expect(monitor.readings.length).toBeGreaterThan(10);
  }, 150_000);
});
