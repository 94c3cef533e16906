/**
 * Certificate rotation through the whole controller, on real components
 * (the API server, kwok's nodes, real etcd members run by
 * test/support/etcd-kubelet.ts, which swaps running pods' mounted Secrets as
 * a kubelet's sync does), under the invariant monitor and a steady TLS client
 * load: leaves that have used more than two thirds of their validity are
 * renewed, then the rotate-ca annotation rotates the issuing CA, each phase
 * in status.tls.rotation, with no failed request, no member restarted and
 * no member down; afterwards a client certificate of the old issuing CA is
 * refused.
 */
import { loadDefaultConfig } from '../../api/config.js';
import type { KubeClient } from '../../kube/client.js';
import { resourcePath } from '../../kube/client.js';
import { describeWithCluster, eventually } from '../cluster/kube.js';
import { LATER_BINARIES_BUILD_MS } from '../cluster/binaries.js';
import { ClientLoad } from '../support/etcd-load.js';
import { apiServerSecrets, type LocalEtcdCluster } from '../support/etcd-members.js';
import { EtcdTestBed } from '../support/etcd-test-bed.js';
import type { InvariantMonitor } from '../support/invariant-monitor.js';
import { clusterPath } from './controller-harness.js';
import { createLeafCertificate, describeCertificate } from '../../model/certificates.js';
import { CLIENT_CERTIFICATE_REQUEST, leafSecretData, memberCertificateRequest } from '../../engines/etcd/certificates.js';
import { encodeSecretValue } from '../../engines/etcd/secret-data.js';
import { probeMember } from '../../engines/etcd/tls-probe.js';
import { clusterIdentity } from '../../model/cluster-identity.js';

const config = loadDefaultConfig();
const NAME = 'kv';
const DAY_MS = 86_400_000;

describeWithCluster('certificate rotation by the controller, on real etcd members', () => {
  let bed: EtcdTestBed;
  let client: KubeClient;
  let namespace: string;
  let cluster: LocalEtcdCluster;
  let monitor: InvariantMonitor;

  beforeAll(async () => {
    bed = await EtcdTestBed.start({ config, name: NAME, label: 'rotation', maxMembers: 3, secretSyncMs: 500 });
    ({ client, namespace, cluster } = bed);
    monitor = bed.monitor();
  }, 180_000 + LATER_BINARIES_BUILD_MS);

  afterAll(async () => {
    await monitor?.stop();
    await bed?.stop();
  });

  const status = () => client.request('GET', clusterPath(namespace, NAME));
  const secret = (name: string) => apiServerSecrets(client, namespace)(name).then((d) => d!);

  it('renews due leaves, then rotates the issuing CA on the annotation: 0 failed requests, no restart, no member down, the old issuer refused', async () => {
    await client.request('POST', `/apis/example.com/v1beta1/namespaces/${namespace}/distributedkvs`, {
      body: { apiVersion: 'example.com/v1beta1', kind: 'DistributedKV', metadata: { name: NAME, namespace }, spec: { size: 3, image: 'registry.k8s.io/etcd:3.6.8-0' } },
    });
    const pods = ['kv-0', 'kv-1', 'kv-2'];
    await eventually('3 healthy members', async () => {
      const members = (await status()).status?.members ?? [];
      return members.length === 3 && members.every((m: any) => m.healthy) ? true : undefined;
    }, 90_000, 200);
    const pids = () => pods.map((p) => cluster.members.get(p)!.process.pid);
    const before = pids();
    const load = new ClientLoad(cluster, pods);
    monitor.start();
    load.start(20_000);
    const figures: string[] = [];
    const phases: string[] = [];
    let watching = true;
    const watchPhases = (async () => {
      while (watching) {
        const phase = (await status()).status?.tls?.rotation?.phase;
        if (phase && phases.at(-1)?.split(' ')[0] !== phase) phases.push(`${phase} ${new Date().toISOString().slice(11, 23)}`);
        await new Promise((r) => setTimeout(r, 100));
      }
    })();
    try {
      // Leaves that have used 250 of their 365 days, as the controller would find them then: written over by the test (admin).
      const identity = clusterIdentity(NAME, config);
      const authority = await secret('kv-tls-ca');
      const root = { certificate: authority['ca.crt'], privateKey: authority['ca.key'] };
      const issuer = { certificate: authority['issuer.crt'], privateKey: authority['issuer.key'] };
      const aged = new Date(Date.now() - 250 * DAY_MS);
      for (const [name, request] of [['kv-tls-member', memberCertificateRequest(identity, namespace, config)], ['kv-tls-client', CLIENT_CERTIFICATE_REQUEST]] as const) {
        const stored = await client.request('GET', resourcePath('v1', 'Secret', namespace, name));
        const data = leafSecretData(await createLeafCertificate(issuer, request, aged, 365), root, issuer);
        await client.request('PUT', resourcePath('v1', 'Secret', namespace, name), { body: { ...stored, data: { ...stored.data, ...Object.fromEntries(Object.entries(data).map(([k, v]) => [k, encodeSecretValue(k, v)])) } } });
      }
      const leafStart = Date.now();
      const renewed = await eventually('both leaves renewed', async () => {
        const [member, clientSecret] = await Promise.all([secret('kv-tls-member'), secret('kv-tls-client')]);
        const [m, c] = [describeCertificate(member['tls.crt'])!, describeCertificate(clientSecret['tls.crt'])!];
        return m.notBefore.getTime() > aged.getTime() + DAY_MS && c.notBefore.getTime() > aged.getTime() + DAY_MS ? m : undefined;
      }, 30_000, 100);
      await eventually('every member serves the renewed certificate', async () => {
        const tls = await secret('kv-tls-client');
        const seen = await Promise.all(pods.map((p) => probeMember(cluster.addressOf(p).clientUrl, { ca: tls['ca.crt'], cert: tls['tls.crt'], key: tls['tls.key'] }, 2000)));
        return seen.every((s) => s.answered && s.servedFingerprint === renewed.fingerprint256) || undefined;
      }, 30_000, 100);
      figures.push(`leaf rotation (renewed and served by every member): ${Date.now() - leafStart} ms, failed requests ${load.requests.filter((r) => r.error).length} of ${load.requests.length}`);

      // CA rotation on demand.
      const oldClient = await secret('kv-tls-client');
      const caStart = Date.now();
      await client.request('PATCH', clusterPath(namespace, NAME), { body: { metadata: { annotations: { [config.tls.rotateCaAnnotation]: 'first' } } }, contentType: 'application/merge-patch+json' });
      await eventually('the rotation done', async () => {
        const tls = (await status()).status?.tls;
        return tls?.rotation?.phase === 'Idle' && tls.rotation.lastRequest === 'first' && !(await secret('kv-tls-ca'))['retired-probe.crt'] ? true : undefined;
      }, 60_000, 200).catch(async (e: Error) => { throw new Error(`${e.message}: ${JSON.stringify((await status()).status?.tls)}; events ${(await bed.events('CertificateRotation')).join(' | ')}`); });
      figures.push(`CA rotation (annotation to Idle): ${Date.now() - caStart} ms; phases ${phases.join(', ')}`);
      for (const pod of pods) {
        const url = cluster.addressOf(pod).clientUrl;
        expect((await probeMember(url, { ca: oldClient['ca.crt'], cert: oldClient['tls.crt'], key: oldClient['tls.key'] }, 2000)).answered).toBe(false);
      }
      expect((await bed.events('CertificateRotation')).length).toBeGreaterThanOrEqual(5);
    } finally {
      watching = false;
      await watchPhases;
      await load.stop();
      await monitor.stop();
    }
    const failed = load.requests.filter((r) => r.error);
    figures.push(`requests ${load.requests.length}, failed ${failed.length}; most voters down at once ${monitor.maxDown()}; longest election ${monitor.longestElectionMs} ms`);
    console.log(`certificate rotation through the controller (${new Date().toISOString()}):\n  ${figures.join('\n  ')}`);
    expect(phases.map((p) => p.split(' ')[0])).toEqual(expect.arrayContaining(['Trusting', 'Reissuing', 'Dropping', 'Idle']));
    expect(failed.map((r) => `${r.pod} ${r.kind}: ${r.error}`)).toEqual([]);
    expect(monitor.violations).toEqual([]);
    expect(monitor.maxDown()).toBe(0);
    expect(pids()).toEqual(before);
    expect((await status()).status.conditions.find((c: any) => c.type === 'CertificateExpiring')).toMatchObject({ status: 'False' });
  }, 180_000);
});
