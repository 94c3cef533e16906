// Slow: 1,000 clusters stored as v1alpha1 and migrated through the conversion webhook on a control plane of its own (about a minute).
/**
 * API evolution on a real kube-apiserver with the controller's conversion
 * webhook registered (its own etcd and API server: the test narrows
 * storedVersions and reads etcd directly, which a shared control plane's
 * other tests must not see). The story is an upgrade: the previous release's
 * CRD (v1alpha1 only) holds 1,000 clusters; this release's CRD makes
 * v1beta1 the storage version, the controller's ConversionService makes its
 * certificate and injects the caBundle, and the migration rewrites every
 * object. etcd is read through its v3 JSON gateway to see which version each
 * object is stored in: the API server itself never says.
 */
import { X509Certificate } from 'node:crypto';
import { connect } from 'node:tls';
import { createCertificateAuthority, createServingCertificate, servesFor, splitBundle } from '../../model/certificates.js';
import { CERT_MANAGER_INJECT_ANNOTATION } from '../../conversion/certificate-rotation.js';
import { ConversionService } from '../../conversion/conversion-service.js';
import { migrateStorageVersion } from '../../conversion/storage-migration.js';
import { PRESERVED_FIELDS_ANNOTATION } from '../../api/conversion.js';
import { loadDefaultConfig, type GeneratorConfig } from '../../api/config.js';
import { CRD_PATH, customResourceDefinition } from '../../api/crd.js';
import { realClock, type Clock } from '../../kube/clock.js';
import { KubeApiError, KubeClient } from '../../kube/client.js';
import { createLogger } from '../../kube/log.js';
import { freePort, startControlPlane, type ControlPlane } from '../cluster/control-plane.js';
import { describeWithCluster, eventually } from '../cluster/kube.js';
import { establishCrd } from '../support/crds.js';
import { dkv } from '../support/dkv-cli.js';

const NAMESPACE = 'shop';
const CONTROLLER_NAMESPACE = 'dkv-system';
const FLEET = 1_000;
const DAY_MS = 86_400_000;
const log = createLogger(process.env.DKV_TEST_LOG_LEVEL ?? 'silent');

const path = (version: string, name?: string) => `/apis/example.com/${version}/namespaces/${NAMESPACE}/distributedkvs${name ? `/${name}` : ''}`;

function cluster(version: string, name: string, spec: Record<string, unknown> = {}): Record<string, unknown> {
  return {
    apiVersion: `example.com/${version}`, kind: 'DistributedKV',
    metadata: { name, namespace: NAMESPACE, labels: { tier: 'gold' }, annotations: { owner: 'team-a' } },
    spec: { size: 3, image: 'registry.k8s.io/etcd:3.6.8-0', backup: { s3Path: 's3://b/p', schedule: '0 2 * * *' }, ...spec },
  };
}

/** The previous release's CRD: v1alpha1 alone, stored, no conversion. */
function previousReleaseCrd(config: GeneratorConfig): Record<string, any> {
  const crd = customResourceDefinition(config) as any;
  const alpha = crd.spec.versions.find((v: any) => v.name === 'v1alpha1');
  return { ...crd, spec: { ...crd.spec, versions: [{ ...alpha, storage: true }], conversion: { strategy: 'None' } } };
}

/** Which apiVersion each stored DistributedKV is encoded in, read from etcd. */
async function storedVersions(etcdUrl: string): Promise<Map<string, string>> {
  const key = '/registry/example.com/distributedkvs/';
  const rangeEnd = key.slice(0, -1) + String.fromCharCode(key.charCodeAt(key.length - 1) + 1);
  const response = await fetch(`${etcdUrl}/v3/kv/range`, {
    method: 'POST',
    body: JSON.stringify({ key: Buffer.from(key).toString('base64'), range_end: Buffer.from(rangeEnd).toString('base64') }),
  });
  const body = await response.json() as { kvs?: { key: string; value: string }[] };
  return new Map((body.kvs ?? []).map((kv) => [
    Buffer.from(kv.key, 'base64').toString('utf8').slice(key.length),
    (JSON.parse(Buffer.from(kv.value, 'base64').toString('utf8')) as { apiVersion: string }).apiVersion,
  ]));
}

/** The SHA-256 fingerprint of the certificate a TLS server on loopback presents. */
function servedCertificate(port: number): Promise<string> {
  return new Promise((resolve, reject) => {
    const socket = connect({ host: '127.0.0.1', port, rejectUnauthorized: false }, () => {
      resolve(socket.getPeerX509Certificate()!.fingerprint256);
      socket.end();
    });
    socket.on('error', reject);
  });
}

async function inBatches<T>(items: readonly T[], size: number, each: (item: T) => Promise<unknown>): Promise<void> {
  for (let i = 0; i < items.length; i += size) await Promise.all(items.slice(i, i + size).map(each));
}

describeWithCluster('API versions: v1alpha1 and v1beta1 through the conversion webhook, and storage migration', () => {
  let plane: ControlPlane;
  let client: KubeClient;
  let config: GeneratorConfig;
  let webhookPort: number;
  let service: ConversionService | undefined;

  const startService = async (clock: Clock = realClock, refreshMs?: number) => {
    service = new ConversionService({ client, config, namespace: CONTROLLER_NAMESPACE, host: '127.0.0.1', port: webhookPort, clock, log, refreshMs, backoff: { baseMs: 200, maxMs: 1000 } });
    await service.start();
  };

  beforeAll(async () => {
    plane = await startControlPlane();
    client = KubeClient.fromKubeconfig(plane.kubeconfigPath);
    webhookPort = await freePort();
    const defaults = loadDefaultConfig();
    config = { ...defaults, conversion: { ...defaults.conversion, url: `https://127.0.0.1:${webhookPort}/convert` } };
    for (const name of [NAMESPACE, CONTROLLER_NAMESPACE]) await client.request('POST', '/api/v1/namespaces', { body: { apiVersion: 'v1', kind: 'Namespace', metadata: { name } } });
  }, 120_000);

  afterAll(async () => {
    await service?.stop();
    client?.close();
    await plane?.stop();
  });

  it('before the upgrade: the previous release stores 1,000 clusters in v1alpha1', async () => {
    await establishCrd(client, previousReleaseCrd(config));
    const names = Array.from({ length: FLEET }, (_, i) => `kv-${String(i).padStart(4, '0')}`);
    await inBatches(names, 25, (name) => client.request('POST', path('v1alpha1'), { body: cluster('v1alpha1', name) }));
    const stored = await storedVersions(plane.etcdUrl);
    expect(stored.size).toBe(FLEET);
    expect(new Set(stored.values())).toEqual(new Set(['example.com/v1alpha1']));
  }, 180_000);

  it('the upgrade: the controller makes its certificate, injects the CA bundle, and both versions serve every object', async () => {
    await client.apply(customResourceDefinition(config) as any, { fieldManager: 'dkv-test', force: true });
    await startService();
    const crd = await client.request('GET', CRD_PATH);
    const caBundle = Buffer.from(crd.spec.conversion.webhook.clientConfig.caBundle, 'base64').toString('utf8');
    const secret = await client.request('GET', `/api/v1/namespaces/${CONTROLLER_NAMESPACE}/secrets/${config.conversion.certificateSecret}`);
    expect(Buffer.from(secret.data['ca.crt'], 'base64').toString('utf8')).toBe(caBundle);
    expect(crd.status.storedVersions).toEqual(['v1alpha1', 'v1beta1']);
    // Stored in v1alpha1, read in v1beta1: the API server calls the webhook.
    const beta = await eventually('a v1beta1 read through the webhook', () => client.request('GET', path('v1beta1', 'kv-0000')), 30_000, 200);
    expect(beta).toMatchObject({ apiVersion: 'example.com/v1beta1', spec: { size: 3 }, metadata: { labels: { tier: 'gold' }, annotations: { owner: 'team-a' } } });
    const list = await client.request('GET', path('v1beta1'), { query: { limit: 500 } });
    expect(list.items).toHaveLength(500);
  }, 120_000);

  it('create in v1alpha1, read in v1beta1 and back: the same object, byte for byte, stored in v1beta1', async () => {
    const created = await client.request('POST', path('v1alpha1'), { body: cluster('v1alpha1', 'roundtrip') });
    const asBeta = await client.request('GET', path('v1beta1', 'roundtrip'));
    const back = await client.request('GET', path('v1alpha1', 'roundtrip'));
    expect(JSON.stringify(back)).toBe(JSON.stringify(created));
    expect(JSON.stringify({ ...asBeta, apiVersion: 'example.com/v1alpha1' })).toBe(JSON.stringify(created));
    expect(back.metadata.annotations).toEqual({ owner: 'team-a' }); // nothing added on the way
    expect((await storedVersions(plane.etcdUrl)).get(`${NAMESPACE}/roundtrip`)).toBe('example.com/v1beta1');
  });

  it('a field only v1beta1 can express survives a v1alpha1 client\'s read-modify-write (kubectl edit, a GitOps update)', async () => {
    await client.request('POST', path('v1beta1'), { body: cluster('v1beta1', 'retained', { backup: { s3Path: 's3://b/p', schedule: '0 2 * * *', retain: 9 } }) });
    const seenByOldClient = await client.request('GET', path('v1alpha1', 'retained'));
    expect(seenByOldClient.spec.backup).not.toHaveProperty('retain');
    expect(JSON.parse(seenByOldClient.metadata.annotations[PRESERVED_FIELDS_ANNOTATION])).toEqual({ 'spec.backup.retain': 9 });
    seenByOldClient.spec.size = 5;
    await client.request('PUT', path('v1alpha1', 'retained'), { body: seenByOldClient });
    const now = await client.request('GET', path('v1beta1', 'retained'));
    expect(now.spec).toMatchObject({ size: 5, backup: { retain: 9 } });
    expect(now.metadata.annotations).toEqual({ owner: 'team-a' });
    // And a v1alpha1 merge patch, which never saw the annotation, keeps it too.
    await client.request('PATCH', path('v1alpha1', 'retained'), { contentType: 'application/merge-patch+json', body: { spec: { size: 7 } } });
    expect((await client.request('GET', path('v1beta1', 'retained'))).spec).toMatchObject({ size: 7, backup: { retain: 9 } });
  });

  it('the API server refuses v1beta1\'s field in a v1alpha1 write (no silent drop)', async () => {
    const body = cluster('v1alpha1', 'strict', { backup: { s3Path: 's3://b/p', schedule: '0 2 * * *', retain: 2 } });
    await expect(client.request('POST', path('v1alpha1'), { body, query: { fieldValidation: 'Strict' } }))
      .rejects.toMatchObject({ status: 400, message: expect.stringContaining('unknown field "spec.backup.retain"') });
  });

  it('migrates 1,000 objects to v1beta1, resumably, then drops v1alpha1 from storedVersions', async () => {
    // A migration cut off after 300 writes (the process dies): storedVersions is not narrowed.
    let writes = 0;
    const dying = Object.create(client, {
      request: {
        value: (method: string, p: string, options?: object) => {
          if (method === 'PUT' && ++writes > 300) return Promise.reject(new Error('killed'));
          return client.request(method, p, options);
        },
      },
    }) as KubeClient;
    await expect(migrateStorageVersion({ client: dying, log })).rejects.toThrow('killed');
    expect((await client.request('GET', CRD_PATH)).status.storedVersions).toEqual(['v1alpha1', 'v1beta1']);
    const halfway = [...(await storedVersions(plane.etcdUrl)).values()].filter((v) => v === 'example.com/v1alpha1').length;
    expect(halfway).toBeGreaterThan(0);
    expect(halfway).toBeLessThan(FLEET);

    const started = performance.now();
    const result = await migrateStorageVersion({ client, log });
    const seconds = (performance.now() - started) / 1000;
    process.stdout.write(`storage migration: ${result.rewritten} objects in ${seconds.toFixed(2)} s\n`);
    expect(result).toMatchObject({ migrated: true, storedVersionsBefore: ['v1alpha1', 'v1beta1'] });
    expect(result.rewritten + result.skipped).toBe(FLEET + 2);
    const stored = await storedVersions(plane.etcdUrl);
    expect(new Set(stored.values())).toEqual(new Set(['example.com/v1beta1']));
    expect((await client.request('GET', CRD_PATH)).status.storedVersions).toEqual(['v1beta1']);
    // Nothing was lost on the way: the retained field too.
    expect((await client.request('GET', path('v1beta1', 'retained'))).spec.backup.retain).toBe(9);
    expect((await client.request('GET', path('v1beta1'))).items).toHaveLength(FLEET + 2);
    // A second run has nothing to do; `dkv migrate` is the same migration from a workstation.
    expect(await migrateStorageVersion({ client, log })).toMatchObject({ migrated: false, rewritten: 0 });
    const idle = await dkv(['migrate', '--kubeconfig', plane.kubeconfigPath], {});
    expect(idle).toMatchObject({ status: 0, stdout: 'nothing to migrate: storedVersions lists the storage version alone\n' });
    const forced = await dkv(['migrate', '--kubeconfig', plane.kubeconfigPath, '--force'], {});
    expect(forced.status).toBe(0);
    expect(forced.stdout).toMatch(/^migrated: \d+ rewritten, \d+ written by others or deleted meanwhile; storedVersions was v1beta1, now the storage version alone\n$/);
  }, 180_000);

  it('with the webhook down: v1alpha1 requests fail with an error naming the webhook, v1beta1 ones work, nothing is lost', async () => {
    const before = await client.request('GET', path('v1beta1', 'retained'));
    await service!.stop();
    const failure = await client.request('GET', path('v1alpha1', 'retained')).catch((e: unknown) => e);
    expect(failure).toBeInstanceOf(KubeApiError);
    expect((failure as KubeApiError).message).toMatch(/conversion webhook for example\.com\/v1beta1, Kind=DistributedKV failed/);
    await expect(client.request('POST', path('v1alpha1'), { body: cluster('v1alpha1', 'while-down') })).rejects.toMatchObject({ message: expect.stringMatching(/conversion webhook/) });
    // The storage version needs no conversion: the controller's own reads and writes go on.
    expect((await client.request('GET', path('v1beta1', 'retained'))).metadata.resourceVersion).toBe(before.metadata.resourceVersion);
    await client.request('PATCH', path('v1beta1', 'retained'), { contentType: 'application/merge-patch+json', body: { metadata: { labels: { tier: 'silver' } } } });
    await startService();
    const after = await eventually('v1alpha1 reads once the webhook is back', (): Promise<any> => client.request('GET', path('v1alpha1', 'retained')), 30_000, 200);
    expect(after.metadata.labels).toEqual({ tier: 'silver' });
    expect(JSON.parse(after.metadata.annotations[PRESERVED_FIELDS_ANNOTATION])).toEqual({ 'spec.backup.retain': 9 });
    await expect(client.request('GET', path('v1beta1', 'while-down'))).rejects.toMatchObject({ status: 404 }); // refused, not half-stored
  }, 60_000);

  it('rotates a CA and a serving certificate near their end with no failed conversion, the old CA trusted until the new one serves', async () => {
    const secretPath = `/api/v1/namespaces/${CONTROLLER_NAMESPACE}/secrets/${config.conversion.certificateSecret}`;
    const secretText = async (key: string) => Buffer.from((await client.request('GET', secretPath)).data[key], 'base64').toString('utf8');
    await service!.stop();
    await client.request('DELETE', secretPath);
    // Certificates made 2.5 days ago with 3 days of validity: still valid, less than a third of their life left.
    let offsetMs = -2.5 * DAY_MS;
    const shifting: Clock = { ...realClock, now: () => Date.now() + offsetMs };
    const longLived = config;
    config = { ...config, conversion: { ...config.conversion, caValidityDays: 3, certificateValidityDays: 3 } };
    await startService(shifting, 1_000);
    await eventually('conversions with the first certificates', () => client.request('GET', path('v1alpha1', 'kv-0001')), 30_000, 200);
    const oldCa = await secretText('ca.crt');

    // Conversions keep being asked for while the rotation runs (bounded: it stops by itself).
    const failures: unknown[] = [];
    let conversions = 0;
    let rotating = true;
    const load = (async () => {
      for (let i = 0; rotating && i < 20_000; i++) {
        await client.request('GET', path('v1alpha1', 'kv-0002')).then(() => conversions++, (e: unknown) => failures.push(e));
      }
    })();
    offsetMs = 0; // the service's next refreshes find both near their end
    const rotated = await eventually('a serving certificate from a new CA, both CAs trusted', async () => {
      const bundle = splitBundle(await secretText('ca.crt'));
      const serving = await secretText('tls.crt');
      return bundle.length === 2 && bundle[1] === oldCa && servesFor(serving, bundle[0], { dnsNames: [], ipAddresses: ['127.0.0.1'] }) ? serving : undefined;
    }, 30_000, 200);
    // Every replica serves it after its refresh: this one's webhook answers with it.
    await eventually('the webhook to serve the renewed certificate', async () => (await servedCertificate(webhookPort)) === new X509Certificate(rotated).fingerprint256 || undefined, 10_000, 100);
    const crd = await client.request('GET', CRD_PATH);
    expect(Buffer.from(crd.spec.conversion.webhook.clientConfig.caBundle, 'base64').toString('utf8')).toBe(await secretText('ca.crt'));
    await expect(client.request('GET', path('v1alpha1', 'kv-0003'))).resolves.toMatchObject({ apiVersion: 'example.com/v1alpha1' });
    rotating = false;
    await load;
    expect(conversions).toBeGreaterThan(0);
    expect(failures).toEqual([]);
    config = longLived;
  }, 90_000);

  it('leaves certificate and caBundle to cert-manager where the CRD carries its CA-injector annotation', async () => {
    const secretPath = `/api/v1/namespaces/${CONTROLLER_NAMESPACE}/secrets/${config.conversion.certificateSecret}`;
    // A service of the usual pace: the one the rotation above left refreshes every second (and with short-lived
    // certificates), and a refresh that read the CRD before the annotation below could renew the Secret after it.
    await service!.stop();
    await startService();
    // The test plays cert-manager: it issues the Secret and injects the bundle.
    const ca = await createCertificateAuthority('cert-manager-ca', new Date(), 30);
    const serving = await createServingCertificate(ca, { dnsNames: [], ipAddresses: ['127.0.0.1'] }, new Date(), 30);
    const current = await client.request('GET', secretPath);
    const data = { 'ca.crt': ca.certificate, 'tls.crt': serving.certificate, 'tls.key': serving.privateKey };
    await client.request('PUT', secretPath, { body: { ...current, data: Object.fromEntries(Object.entries(data).map(([k, v]) => [k, Buffer.from(v).toString('base64')])) } });
    await client.request('PATCH', CRD_PATH, {
      contentType: 'application/merge-patch+json',
      body: {
        metadata: { annotations: { [CERT_MANAGER_INJECT_ANNOTATION]: `${CONTROLLER_NAMESPACE}/dkv-webhook` } },
        spec: { conversion: { webhook: { clientConfig: { caBundle: Buffer.from(ca.certificate).toString('base64') } } } },
      },
    });
    const secretVersion = (await client.request('GET', secretPath)).metadata.resourceVersion;
    const crdVersion = (await client.request('GET', CRD_PATH)).metadata.resourceVersion;
    expect(await service!.refresh()).toEqual(['cert-manager']);
    expect(await servedCertificate(webhookPort)).toBe(new X509Certificate(serving.certificate).fingerprint256);
    await expect(eventually('conversion with cert-manager\'s certificate', () => client.request('GET', path('v1alpha1', 'kv-0004')), 30_000, 200))
      .resolves.toMatchObject({ apiVersion: 'example.com/v1alpha1' });
    expect((await client.request('GET', secretPath)).metadata.resourceVersion).toBe(secretVersion);
    expect((await client.request('GET', CRD_PATH)).metadata.resourceVersion).toBe(crdVersion);
  }, 60_000);
});
