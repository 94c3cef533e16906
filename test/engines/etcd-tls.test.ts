/**
 * TLS on real etcd members, started with exactly the arguments and the
 * mounted Secrets the generator gives each pod (LocalEtcdCluster writes the
 * member Secret's keys to files, as the kubelet mounts them), and the
 * certificates as the controller issues them: the client port serves only
 * clients with an unexpired certificate of the cluster's own CA, and a
 * process that presents no valid peer certificate cannot join, while one
 * with the cluster's member certificate, on the same volume-less start, can.
 */
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Agent, get as httpsGet } from 'node:https';
import { locateBinaries } from '../cluster/control-plane.js';
import { byRole, synth } from '../generator/support.js';
import { b64, etcdPost, issueTestSecrets, LocalEtcdCluster, trustClient, type StatefulSetLike } from '../support/etcd-members.js';
import { eventually, yes } from '../support/eventually.js';
import { httpProbe } from '../support/http-probe.js';
import { EtcdMembership } from '../../engines/etcd/membership.js';
import { postJson, type EtcdClientTls } from '../../engines/etcd/etcd-http.js';
import { CLIENT_CERTIFICATE_REQUEST } from '../../engines/etcd/certificates.js';
import { createLeafCertificate } from '../../model/certificates.js';

const describeWithEtcd = process.env.DKV_SKIP_CLUSTER ? describe.skip : describe;
const NAMESPACE = 'shop';
const MEMBER_SECRET = 'kv-tls-member';
const DAY_MS = 86_400_000;

describeWithEtcd('TLS between etcd members and to clients, on real members', () => {
  let dir: string;
  let cluster: LocalEtcdCluster;
  let membership: EtcdMembership;
  let client: EtcdClientTls;
  let secrets: Map<string, Record<string, string>>;
  let elsewhere: Map<string, Record<string, string>>;
  let memberConfig: Record<string, string>;
  const pods = ['kv-0', 'kv-1', 'kv-2'];
  const rangeOver = (url: string, agent?: Agent) => postJson(`${url}/v3/kv/range`, JSON.stringify({ key: b64('orders/1') }), AbortSignal.timeout(5000), agent);

  beforeAll(async () => {
    dir = mkdtempSync(join(tmpdir(), 'dkv-etcd-tls-'));
    const objects = synth({ name: 'kv', namespace: NAMESPACE, size: 3, image: 'registry.k8s.io/etcd:3.6.8-0' });
    const { statefulSet, memberConfig: configMap } = byRole(objects);
    memberConfig = { ...configMap!.data };
    ({ secrets, client } = await issueTestSecrets('kv', NAMESPACE));
    // The same names, another cluster's CA: what a member or client of another cluster holds.
    ({ secrets: elsewhere } = await issueTestSecrets('kv', NAMESPACE));
    cluster = new LocalEtcdCluster(statefulSet as unknown as StatefulSetLike, NAMESPACE, locateBinaries(['etcd']), dir, async () => memberConfig, async (name) => secrets.get(name));
    for (let i = 0; i < 3; i++) await cluster.start(i);
    await eventually('3 members ready', async () => {
      for (const pod of pods) if ((await httpProbe(`${(await cluster.address(pod)).metricsUrl}/readyz`)).status !== 200) return undefined;
      return true;
    }, 60_000, 100, () => pods.map((p) => cluster.exited(p)).find(Boolean));
    const urls = await Promise.all(pods.map(async (p) => (await cluster.address(p)).clientUrl));
    trustClient(urls, client);
    membership = new EtcdMembership(() => pods, (pod) => cluster.addressOf(pod).clientUrl, 3000, undefined, client);
    await etcdPost(urls[0], '/v3/kv/put', { key: b64('orders/1'), value: b64('paid') });
  }, 120_000);

  afterAll(async () => {
    await cluster?.stopAll();
    rmSync(dir, { recursive: true, force: true });
  });

  it('listens for clients and peers on https, and serves the probes\' /readyz and /metrics on plain HTTP without a certificate', async () => {
    const { clientUrl, peerUrl, metricsUrl } = cluster.addressOf('kv-0');
    expect([clientUrl.split(':')[0], peerUrl.split(':')[0], metricsUrl.split(':')[0]]).toEqual(['https', 'https', 'http']);
    expect((await httpProbe(`${metricsUrl}/readyz`)).status).toBe(200);
    expect((await httpProbe(`${metricsUrl}/metrics`)).body).toContain('etcd_server_has_leader 1');
  });

  it('answers a client with the cluster\'s client certificate', async () => {
    const answer = await rangeOver(cluster.addressOf('kv-1').clientUrl, new Agent({ ca: client.ca, cert: client.cert, key: client.key }));
    expect(answer.status).toBe(200);
    expect(Buffer.from(JSON.parse(answer.text).kvs[0].value, 'base64').toString()).toBe('paid');
  });

  it('refuses a client without a certificate, over TLS or plain HTTP', async () => {
    const url = cluster.addressOf('kv-1').clientUrl;
    await expect(rangeOver(url, new Agent({ ca: client.ca }))).rejects.toThrow(/certificate required|alert|handshake|socket hang up|ECONNRESET/i);
    const plain = await rangeOver(url.replace('https:', 'http:')).then((a) => a.status, (e: Error) => e.message);
    expect(plain).not.toBe(200);
  });

  it('refuses a client whose certificate another CA signed', async () => {
    const other = elsewhere.get('kv-tls-client')!;
    await expect(rangeOver(cluster.addressOf('kv-1').clientUrl, new Agent({ ca: client.ca, cert: other['tls.crt'], key: other['tls.key'] })))
      .rejects.toThrow(/unknown ca|bad certificate|alert|handshake|ECONNRESET/i);
  });

  it('refuses a client whose certificate, from the cluster\'s own CA, has expired', async () => {
    const authority = secrets.get('kv-tls-ca')!;
    const expired = await createLeafCertificate({ certificate: authority['ca.crt'], privateKey: authority['ca.key'] }, CLIENT_CERTIFICATE_REQUEST, new Date(Date.now() - 3 * DAY_MS), 1);
    await expect(rangeOver(cluster.addressOf('kv-1').clientUrl, new Agent({ ca: client.ca, cert: expired.certificate, key: expired.privateKey })))
      .rejects.toThrow(/expired|bad certificate|alert|handshake|ECONNRESET/i);
  });

  it('opens the peer port to the members\' certificate alone: a client certificate of the same CA is refused, even one naming the host it calls from', async () => {
    const peersOf = (tls: { cert: string; key: string }) => new Promise<number>((resolve, reject) => {
      const request = httpsGet(`${cluster.addressOf('kv-1').peerUrl}/members`, { agent: new Agent({ ca: client.ca, cert: tls.cert, key: tls.key }), signal: AbortSignal.timeout(5000) }, (res) => {
        res.resume();
        res.on('end', () => resolve(res.statusCode ?? 0));
      });
      request.on('error', reject);
    });
    const member = secrets.get(MEMBER_SECRET)!;
    expect(await peersOf({ cert: member['tls.crt'], key: member['tls.key'] })).toBe(200);
    // A client identity's certificate from the cluster's CA, with the names of the address it calls from: it passes
    // etcd's check of the remote address against the certificate's names, so only the allowed common name stops it.
    const authority = secrets.get('kv-tls-ca')!;
    const withNames = await createLeafCertificate({ certificate: authority['ca.crt'], privateKey: authority['ca.key'] },
      { commonName: 'orders', dnsNames: ['localhost'], ipAddresses: ['127.0.0.1', '::1'], server: false, client: true }, new Date(), 30);
    await expect(peersOf({ cert: withNames.certificate, key: withNames.privateKey })).rejects.toThrow(/bad certificate|alert|handshake|socket hang up|ECONNRESET/i);
    await expect(peersOf({ cert: client.cert, key: client.key })).rejects.toThrow(/bad certificate|alert|handshake|socket hang up|ECONNRESET/i);
    // The members still replicate to each other through the same port.
    await etcdPost(cluster.addressOf('kv-0').clientUrl, '/v3/kv/put', { key: b64('orders/2'), value: b64('after the refusal') });
    const agent = new Agent({ ca: client.ca, cert: client.cert, key: client.key });
    // kv-2's own copy (a serializable read answers from the member itself): it came over the peer port.
    await eventually('orders/2 on kv-2', async () => {
      const answer = await postJson(`${cluster.addressOf('kv-2').clientUrl}/v3/kv/range`, JSON.stringify({ key: b64('orders/2'), serializable: true }), AbortSignal.timeout(5000), agent);
      return JSON.parse(answer.text).kvs?.length === 1 ? true : undefined;
    }, 10_000, 100);
    expect((await membership.status()).healthyVoters).toBe(3);
  });

  it('keeps a process with a member\'s peer URL but another CA\'s certificate out of the membership; the cluster\'s own certificate lets it in', async () => {
    const kv3 = await cluster.address('kv-3');
    // etcd refuses a membership change until its leader has heard from every member for a while after the start.
    const id = await eventually('kv-3 added as a learner', () => membership.addLearner(kv3.peerUrl), 30_000, 500);
    memberConfig = {
      ETCD_INITIAL_CLUSTER: [...pods, 'kv-3'].map((p) => `${p}=https://${p}.kv-peers:2380`).join(','),
      ETCD_INITIAL_CLUSTER_STATE: 'existing',
    };
    // The rogue: kv-3's name and peer URL, a member certificate of another cluster's CA.
    const own = secrets.get(MEMBER_SECRET)!;
    secrets.set(MEMBER_SECRET, elsewhere.get(MEMBER_SECRET)!);
    const rogue = await cluster.startPod('kv-3', (cluster as unknown as { statefulSet: StatefulSetLike }).statefulSet.spec.template.spec.containers[0], 'rogue');
    secrets.set(MEMBER_SECRET, own);
    // Until the rogue gave up (etcd exits when no peer lets it read the cluster) or the members logged its refusal.
    const refused = (log: string) => /bad certificate|unknown certificate authority|certificate signed by unknown authority|rejected connection|TLS handshake error/i.test(log);
    await eventually('the rogue refused', async () => yes(cluster.exited('kv-3') !== undefined || refused(readFileSync(rogue.log, 'utf8'))
      || pods.some((p) => refused(readFileSync(cluster.members.get(p)!.log, 'utf8')))), 30_000, 200);
    // For its certificate, not for anything else: a TLS refusal is what the logs show.
    expect([rogue.log, ...pods.map((p) => cluster.members.get(p)!.log)].some((log) => refused(readFileSync(log, 'utf8')))).toBe(true);
    const status = await membership.status();
    const learner = status.members.find((m) => m.id === id)!;
    expect(learner).toMatchObject({ name: '', learner: true, healthy: false });
    expect(status.healthyVoters).toBe(3);
    await cluster.stop('kv-3');

    // The same start with the cluster's own member certificate joins (on an empty volume).
    const member = await cluster.startPod('kv-3', (cluster as unknown as { statefulSet: StatefulSetLike }).statefulSet.spec.template.spec.containers[0], 'own');
    await eventually('kv-3 joined as a learner', async () => yes((await membership.status()).members.some((m) => m.id === id && m.name === 'kv-3')), 30_000, 200, () => cluster.exited('kv-3'));
    expect(member.args).toContain('--peer-client-cert-auth');
  }, 90_000);
});
