/**
 * spec.tls.mode cert-manager on real components (docs/security.md,
 * "cert-manager"):
 *
 * - The generated Certificates against cert-manager's own API: its CRDs (the
 *   pinned copies the types are imported from, api/crds/cert-manager/)
 *   installed on the test control plane, each Certificate applied
 *   server-side with dryRun (the API server validates it against the CRD's
 *   schema and stores nothing), and one the schema does not allow refused.
 * - A cluster through the whole controller, on real etcd members started
 *   from the generated arguments (test/support/etcd-test-bed.ts), under the
 *   invariant monitor and a steady TLS client load: the controller writes
 *   the Certificates and no StatefulSet until cert-manager's Secrets are
 *   there; the members then run on them; a renewal (new leaves of the same
 *   issuer in the same Secrets) is taken with no restart and no failed
 *   request; a Secret of the wrong shape is reported, naming the key, and
 *   nothing is written to the members.
 * - A cluster in this mode on an API server without cert-manager (a plane of
 *   its own): its Certificates are withheld and `TLSSecretsReady` says
 *   cert-manager is missing, instead of every reconcile failing on a kind
 *   the server does not serve; once the CRDs are installed they are applied.
 *
 * Who plays cert-manager: the real cert-manager controller (its CA issuer
 * and Certificate controllers, v1.21.2, built from the Go module proxy by
 * test/cluster/cert-manager/build.sh) runs against the test API server with
 * a CA Issuer, when a Go toolchain is there to build it. Without one (or
 * with DKV_CERT_MANAGER=stand-in) a step of this test plays its part and
 * says so: it writes each Certificate's Secret exactly as cert-manager's CA
 * issuer does (test/support/cert-manager-secrets.ts: type kubernetes.io/tls,
 * tls.crt, tls.key, ca.crt, the cert-manager.io/* annotations and the
 * secretTemplate's labels), from the Certificate the controller applied.
 */
import { execFileSync, spawn, type ChildProcess } from 'node:child_process';
import { readdirSync, readFileSync, openSync } from 'node:fs';
import { join } from 'node:path';
import { parseAllDocuments } from 'yaml';
import { loadDefaultConfig, type GeneratorConfig } from '../../api/config.js';
import { packageRoot } from '../../api/package-root.js';
import { KubeClient, resourcePath } from '../../kube/client.js';
import type { KubeObject } from '../../model/kube-object.js';
import { createCertificateAuthority, describeCertificate, type KeyedCertificate } from '../../model/certificates.js';
import { encodeSecretValue } from '../../engines/etcd/secret-data.js';
import { probeMember } from '../../engines/etcd/tls-probe.js';
import { createNamespace, describeWithCluster, eventually, isApiError, testClient } from '../cluster/kube.js';
import { LATER_BINARIES_BUILD_MS } from '../cluster/binaries.js';
import { establishCrd } from '../support/crds.js';
import { ClientLoad } from '../support/etcd-load.js';
import { apiServerSecrets, type LocalEtcdCluster } from '../support/etcd-members.js';
import { EtcdTestBed } from '../support/etcd-test-bed.js';
import type { InvariantMonitor } from '../support/invariant-monitor.js';
import { certManagerSecret, secretObject } from '../support/cert-manager-secrets.js';
import { hasGo } from '../support/prometheus-tools.js';
import { synth } from '../generator/support.js';
import { CERT_MANAGER_CRD_MISSING } from '../../reconciler/day2/cert-manager-tls-step.js';
import { clusterPath } from './controller-harness.js';

const CRD_ROOT = join(packageRoot(), 'api', 'crds', 'cert-manager');

function certManagerCrds(): Record<string, any>[] {
  const [version] = readdirSync(CRD_ROOT).filter((v) => v.startsWith('v'));
  const dir = join(CRD_ROOT, version);
  return readdirSync(dir).filter((f) => f.endsWith('.yaml')).flatMap((f) => parseAllDocuments(readFileSync(join(dir, f), 'utf8')).map((d) => d.toJS()).filter(Boolean));
}

const ISSUER = 'shop-ca';
const base = loadDefaultConfig();
const config: GeneratorConfig = { ...base, tls: { ...base.tls, certManager: { issuerRef: { name: ISSUER, kind: 'Issuer', group: 'cert-manager.io' } } } };
const isCertificate = (o: KubeObject) => o.apiVersion === 'cert-manager.io/v1' && o.kind === 'Certificate';

describeWithCluster('the generated Certificates, against cert-manager\'s CRDs', () => {
  let client: KubeClient;
  let namespace: string;

  beforeAll(async () => {
    client = testClient();
    for (const crd of certManagerCrds()) await establishCrd(client, crd);
    namespace = await createNamespace(client, 'cert-manager-dry-run');
  }, 120_000);

  const dryRun = (object: KubeObject) => client.apply({ ...object, metadata: { ...object.metadata, namespace } } as any, { fieldManager: 'dkv-test', dryRun: true });

  it('accepts both Certificates of a cluster with backups, as dkv synth writes them, every field kept', async () => {
    const certificates = synth({ tls: { mode: 'cert-manager' }, backup: { s3Path: 's3://acme-kv-backups/shop/orders', schedule: '0 2 * * *' } }, config).filter(isCertificate);
    expect(certificates.map((c) => c.metadata.name)).toEqual(['orders-tls-member', 'orders-tls-client']);
    for (const certificate of certificates) {
      const stored = await dryRun(certificate);
      expect(stored.spec).toEqual((certificate as any).spec);
    }
  });

  it('accepts them naming a ClusterIssuer', async () => {
    const clusterIssuer: GeneratorConfig = { ...config, tls: { ...config.tls, certManager: { issuerRef: { name: 'corp-ca', kind: 'ClusterIssuer', group: 'cert-manager.io' } } } };
    for (const certificate of synth({ tls: { mode: 'cert-manager' } }, clusterIssuer).filter(isCertificate)) {
      expect((await dryRun(certificate)).spec.issuerRef).toEqual({ name: 'corp-ca', kind: 'ClusterIssuer', group: 'cert-manager.io' });
    }
  });

  it('refuses a Certificate the CRD\'s schema does not allow (the dry run validates)', async () => {
    const [certificate] = synth({ tls: { mode: 'cert-manager' } }, config).filter(isCertificate) as any[];
    const broken = { ...certificate, spec: { ...certificate.spec, usages: ['server auth', 'teleportation'] } };
    const refusal = await dryRun(broken).then(() => undefined, (e: unknown) => e);
    expect(isApiError(refusal, 422)).toBe(true);
    expect((refusal as Error).message).toContain('usages');
  });
});

/** The real cert-manager controller's binary, built (or found in the cache); undefined when the stand-in plays its part. */
function certManagerController(): string | undefined {
  if (process.env.DKV_CERT_MANAGER === 'stand-in' || (!hasGo() && process.env.CI !== 'true')) return undefined;
  const out = execFileSync('bash', [join(packageRoot(), 'test', 'cluster', 'cert-manager', 'build.sh')], { encoding: 'utf8', stdio: ['ignore', 'pipe', 'inherit'] });
  return join(out.trim().split('\n').at(-1)!, 'cert-manager-controller');
}

const NAME = 'kv';

describeWithCluster('a cluster on cert-manager\'s certificates, through the controller, on real etcd members', () => {
  let bed: EtcdTestBed;
  let client: KubeClient;
  let namespace: string;
  let cluster: LocalEtcdCluster;
  let monitor: InvariantMonitor;
  let ca: KeyedCertificate;
  let certManager: ChildProcess | undefined;
  let binary: string | undefined;

  beforeAll(async () => {
    binary = certManagerController();
    bed = await EtcdTestBed.start({ config, name: NAME, label: 'cert-manager', maxMembers: 3, secretSyncMs: 500, crds: certManagerCrds(), keepDirectory: Boolean(process.env.DKV_TEST_KEEP_DIR) });
    ({ client, namespace, cluster } = bed);
    monitor = bed.monitor();
    // The CA Issuer's CA: a Secret of the namespace (tls.crt, tls.key), as cert-manager's CA issuer reads it.
    ca = await createCertificateAuthority('shop-ca', new Date(), 3650);
    await client.request('POST', resourcePath('v1', 'Secret', namespace), {
      body: { apiVersion: 'v1', kind: 'Secret', metadata: { name: 'shop-ca-key', namespace }, type: 'kubernetes.io/tls', data: { 'tls.crt': encodeSecretValue('tls.crt', ca.certificate), 'tls.key': encodeSecretValue('tls.key', ca.privateKey) } },
    });
    await client.request('POST', resourcePath('cert-manager.io/v1', 'Issuer', namespace), {
      body: { apiVersion: 'cert-manager.io/v1', kind: 'Issuer', metadata: { name: ISSUER, namespace }, spec: { ca: { secretName: 'shop-ca-key' } } },
    });
    if (binary) {
      const log = openSync(join(bed.dir, 'cert-manager.log'), 'a');
      certManager = spawn(binary, ['--kubeconfig', bed.plane.kubeconfigPath, '--namespace', namespace, '--cluster-resource-namespace', namespace], { stdio: ['ignore', log, log] });
    } else {
      process.stderr.write('*** cert-manager\'s controller is not running: a step of this test plays its part, writing each Secret as cert-manager\'s CA issuer does (test/support/cert-manager-secrets.ts) ***\n');
    }
  }, 600_000 + LATER_BINARIES_BUILD_MS);

  afterAll(async () => {
    await monitor?.stop();
    certManager?.kill('SIGTERM');
    await bed?.stop();
  });

  const status = () => client.request('GET', clusterPath(namespace, NAME));
  const condition = async (type: string) => ((await status()).status?.conditions ?? []).find((c: any) => c.type === type);
  const secret = (name: string) => apiServerSecrets(client, namespace)(name);
  const getObject = (apiVersion: string, kind: string, name: string) => client.request('GET', resourcePath(apiVersion, kind, namespace, name)).catch((e: unknown) => {
    if (isApiError(e, 404)) return undefined;
    throw e;
  });

  /** What cert-manager does for a Certificate: the real controller, or the stand-in writing the Secret as it would. */
  async function issue(certificateName: string, replace = false): Promise<void> {
    if (certManager) return;
    const certificate = await getObject('cert-manager.io/v1', 'Certificate', certificateName);
    const written = secretObject(await certManagerSecret(certificate, ca, { namespace }));
    const current = await getObject('v1', 'Secret', written.metadata.name);
    if (current && !replace) return;
    if (current) await client.request('PUT', resourcePath('v1', 'Secret', namespace, written.metadata.name), { body: { ...written, metadata: { ...written.metadata, resourceVersion: current.metadata.resourceVersion } } });
    else await client.request('POST', resourcePath('v1', 'Secret', namespace), { body: written });
  }

  it('holds the members until cert-manager wrote the Secrets, then runs them on those; a renewal is taken with no restart and no failed request', async () => {
    await client.request('POST', `/apis/example.com/v1beta1/namespaces/${namespace}/distributedkvs`, {
      body: { apiVersion: 'example.com/v1beta1', kind: 'DistributedKV', metadata: { name: NAME, namespace }, spec: { size: 3, image: 'registry.k8s.io/etcd:3.6.8-0', tls: { mode: 'cert-manager' } } },
    });
    // The controller applies the Certificates and issues nothing itself.
    await eventually('the Certificates applied', async () => ((await getObject('cert-manager.io/v1', 'Certificate', 'kv-tls-member')) && (await getObject('cert-manager.io/v1', 'Certificate', 'kv-tls-client')) ? true : undefined), 60_000, 200);
    expect(await getObject('v1', 'Secret', 'kv-tls-ca')).toBeUndefined();
    if (!certManager) {
      // Before the stand-in writes anything: the members wait, and the condition names the missing Secrets.
      const waiting = await eventually('TLSSecretsReady False', async () => {
        const c = await condition('TLSSecretsReady');
        return c?.status === 'False' ? c : undefined;
      }, 30_000, 200);
      expect(waiting.reason).toBe('WaitingForCertManager');
      expect(waiting.message).toContain(`Secret ${namespace}/kv-tls-member and Secret ${namespace}/kv-tls-client`);
      expect(await getObject('apps/v1', 'StatefulSet', NAME)).toBeUndefined();
    }
    await issue('kv-tls-member');
    await issue('kv-tls-client');

    const pods = ['kv-0', 'kv-1', 'kv-2'];
    await eventually('3 healthy members', async () => {
      const members = (await status()).status?.members ?? [];
      return members.length === 3 && members.every((m: any) => m.healthy) ? true : undefined;
    }, 120_000, 200);
    const member = (await secret('kv-tls-member'))!;
    const written = await getObject('v1', 'Secret', 'kv-tls-member');
    expect(written.type).toBe('kubernetes.io/tls');
    expect(written.metadata.annotations['cert-manager.io/certificate-name']).toBe('kv-tls-member');
    expect(written.metadata.ownerReferences ?? []).toEqual([]);
    expect(Object.keys(member).sort()).toEqual(['ca.crt', 'tls.crt', 'tls.key']);
    expect(describeCertificate(member['ca.crt'])!.fingerprint256).toBe(describeCertificate(ca.certificate)!.fingerprint256);
    const current = (await status()).status;
    expect(current.tls).toEqual(expect.objectContaining({ mode: 'cert-manager', peer: true, client: true, issuedBy: `cert-manager Issuer/${ISSUER}` }));
    expect(current.tls.memberCertificateNotAfter).toBe(describeCertificate(member['tls.crt'])!.notAfter.toISOString());
    expect(await condition('TLSSecretsReady')).toEqual(expect.objectContaining({ status: 'True', reason: 'SecretsReady' }));
    // Fresh certificates: none overdue for renewal (the True side: cert-manager-tls-step.test.ts, with certificates dated back).
    expect(await condition('CertificateExpiring')).toEqual(expect.objectContaining({ status: 'False', reason: 'AsExpected' }));
    // The members run without a CRL (cert-manager writes none) and on the certificate cert-manager wrote.
    const sts = await getObject('apps/v1', 'StatefulSet', NAME);
    // No StatefulSet before both Secrets existed (creation times, to the second).
    for (const name of ['kv-tls-member', 'kv-tls-client']) {
      expect(Date.parse(sts.metadata.creationTimestamp)).toBeGreaterThanOrEqual(Date.parse((await getObject('v1', 'Secret', name)).metadata.creationTimestamp));
    }
    expect((sts.spec.template.spec.containers[0].args as string[]).some((a) => a.includes('crl-file'))).toBe(false);
    const clientSecret = (await secret('kv-tls-client'))!;
    const clientTls = { ca: clientSecret['ca.crt'], cert: clientSecret['tls.crt'], key: clientSecret['tls.key'] };
    for (const pod of pods) {
      expect((await probeMember(cluster.addressOf(pod).clientUrl, clientTls, 3000)).servedFingerprint).toBe(describeCertificate(member['tls.crt'])!.fingerprint256);
    }

    // Renewal: new leaves of the same issuer in the same Secrets (cert-manager re-issues on a changed spec, or at renewBeforePercentage).
    const pids = () => pods.map((p) => cluster.members.get(p)!.process.pid);
    const before = pids();
    const load = new ClientLoad(cluster, pods);
    monitor.start();
    load.start(20_000);
    try {
      if (certManager) {
        for (const name of ['kv-tls-member', 'kv-tls-client']) {
          // A Certificate re-issues when its Issuing condition is set (what `cmctl renew` does).
          const certificate = await getObject('cert-manager.io/v1', 'Certificate', name);
          await client.request('PATCH', `${resourcePath('cert-manager.io/v1', 'Certificate', namespace, name)}/status`, {
            body: { status: { conditions: [...(certificate.status?.conditions ?? []).filter((c: any) => c.type !== 'Issuing'), { type: 'Issuing', status: 'True', reason: 'ManuallyTriggered', message: 'test', lastTransitionTime: new Date().toISOString() }] } },
            contentType: 'application/merge-patch+json',
          });
        }
      } else {
        await issue('kv-tls-member', true);
        await issue('kv-tls-client', true);
      }
      const renewed = await eventually('the renewed members\' certificate in its Secret', async () => {
        const now = (await secret('kv-tls-member'))!;
        return now['tls.crt'] !== member['tls.crt'] ? now : undefined;
      }, 60_000, 200);
      const renewedClient = await eventually('the renewed client certificate in its Secret', async () => {
        const now = (await secret('kv-tls-client'))!;
        return now['tls.crt'] !== clientSecret['tls.crt'] ? now : undefined;
      }, 60_000, 200);
      const renewedTls = { ca: renewedClient['ca.crt'], cert: renewedClient['tls.crt'], key: renewedClient['tls.key'] };
      await eventually('every member serves the renewed leaf', async () => {
        for (const pod of pods) {
          const served = await probeMember(cluster.addressOf(pod).clientUrl, renewedTls, 3000);
          if (served.servedFingerprint !== describeCertificate(renewed['tls.crt'])!.fingerprint256) return undefined;
        }
        return true;
      }, 30_000, 200);
      await eventually('status.tls follows the renewal', async () => ((await status()).status?.tls?.memberCertificateNotAfter === describeCertificate(renewed['tls.crt'])!.notAfter.toISOString() ? true : undefined), 30_000, 200);
    } finally {
      await load.stop();
      await monitor.stop();
    }
    const failed = load.requests.filter((r) => r.error);
    process.stdout.write(`cert-manager (${certManager ? 'the real controller' : 'the stand-in'}): renewal under load: requests ${load.requests.length}, failed ${failed.length}; most voters down ${monitor.maxDown()}\n`);
    expect(failed.map((r) => r.error)).toEqual([]);
    expect(load.requests.length).toBeGreaterThan(20);
    expect(pids()).toEqual(before);
    expect(monitor.violations).toEqual([]);
    expect(monitor.maxDown()).toBe(0);
  }, 300_000);

  it('reports a Secret of the wrong shape, naming the key, and writes nothing to the members because of it', async () => {
    // cert-manager would re-issue a broken Secret at once: it is stopped first, so the broken one stays.
    if (certManager && certManager.exitCode === null) {
      const exited = new Promise((resolve) => certManager!.once('exit', resolve));
      certManager.kill('SIGTERM');
      await exited;
    }
    const sts = await getObject('apps/v1', 'StatefulSet', NAME);
    const current = await getObject('v1', 'Secret', 'kv-tls-client');
    const { 'ca.crt': _, ...withoutCa } = current.data;
    // Written over as a broken issuer (or a hand edit) would: ca.crt gone.
    await client.request('PUT', resourcePath('v1', 'Secret', namespace, 'kv-tls-client'), { body: { ...current, data: withoutCa } });
    const reported = await eventually('TLSSecretsReady False', async () => {
      const c = await condition('TLSSecretsReady');
      return c?.status === 'False' ? c : undefined;
    }, 30_000, 200);
    expect(reported.reason).toBe('SecretInvalid');
    expect(reported.message).toContain('Secret kv-tls-client: data.ca.crt missing or not PEM');
    expect((await bed.events('TLSCertificateProblem')).join('\n')).toContain('data.ca.crt');
    expect((await getObject('apps/v1', 'StatefulSet', NAME)).metadata.generation).toBe(sts.metadata.generation);
  }, 60_000);
});

describeWithCluster('a cluster in mode cert-manager where cert-manager is not installed', () => {
  let bed: EtcdTestBed;

  beforeAll(async () => {
    // A plane of its own: the first describe installs cert-manager's CRDs on the shared one.
    bed = await EtcdTestBed.start({ config, name: NAME, label: 'no-cert-manager', maxMembers: 3 });
  }, 600_000 + LATER_BINARIES_BUILD_MS);

  afterAll(async () => {
    await bed?.stop();
  });

  it('withholds its Certificates and says cert-manager is missing, writing no Certificate and starting no member; applies them once cert-manager\'s CRDs are there', async () => {
    const { client, namespace } = bed;
    const cluster = () => client.request('GET', clusterPath(namespace, NAME));
    const tlsSecretsReady = async () => ((await cluster()).status?.conditions ?? []).find((c: any) => c.type === 'TLSSecretsReady');
    const exists = (apiVersion: string, kind: string, name: string) => client.request('GET', resourcePath(apiVersion, kind, namespace, name)).then(() => true, (e: unknown) => {
      if (isApiError(e, 404)) return false;
      throw e;
    });
    await client.request('POST', clusterPath(namespace), {
      body: { apiVersion: 'example.com/v1beta1', kind: 'DistributedKV', metadata: { name: NAME, namespace }, spec: { size: 3, image: 'registry.k8s.io/etcd:3.6.8-0', tls: { mode: 'cert-manager' } } },
    });
    const missing = await eventually('TLSSecretsReady to say cert-manager is missing', async () => {
      const c = await tlsSecretsReady();
      return c?.reason === 'CertManagerCRDMissing' ? c : undefined;
    }, 60_000, 200);
    expect(missing).toMatchObject({ status: 'False', message: CERT_MANAGER_CRD_MISSING });
    // The rest of the cluster is applied; no member starts (no Secrets can come), and no Certificate write was tried.
    const generated = ((await cluster()).status.generatedObjects as { kind: string }[]).map((g) => g.kind);
    expect(generated).toEqual(expect.arrayContaining(['Service', 'ConfigMap']));
    expect(generated).not.toContain('Certificate');
    expect(await exists('apps/v1', 'StatefulSet', NAME)).toBe(false);
    expect(bed.controllerWrites.filter((w) => w.includes('/apis/cert-manager.io/'))).toEqual([]);

    for (const crd of certManagerCrds()) await establishCrd(client, crd);
    // A running controller asks discovery again within 30 s (served-kind.ts); one started now asks at once.
    await bed.controller?.stop();
    await bed.startController();
    await eventually('the Certificates applied', async () => ((await exists('cert-manager.io/v1', 'Certificate', 'kv-tls-member')) && (await exists('cert-manager.io/v1', 'Certificate', 'kv-tls-client')) ? true : undefined), 60_000, 200);
    const waiting = await eventually('TLSSecretsReady to wait for cert-manager\'s Secrets', async () => {
      const c = await tlsSecretsReady();
      return c?.reason === 'WaitingForCertManager' ? c : undefined;
    }, 60_000, 200);
    expect(waiting.status).toBe('False');
  }, 180_000);
});
