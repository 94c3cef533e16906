/**
 * The CertificateExpiring condition (reconciler/core/certificate-rotation-writes.ts):
 * True, naming the certificate, its expiry and the reason, when a
 * certificate is in its renewal window and rotation cannot proceed (a TLS
 * Secret of the wrong shape, the CA missing); False otherwise. No member is
 * dialled and nothing is written when rotation cannot proceed.
 */
import { loadDefaultConfig } from '../../api/config.js';
import { rotateCertificates, type RotationInput } from '../../reconciler/core/certificate-rotation-writes.js';
import type { ReconcileContext } from '../../reconciler/core/reconcile-context.js';
import { clusterIdentity } from '../../model/cluster-identity.js';
import { tlsAsked } from '../../model/tls.js';
import { issueClusterCertificates, leafSecretData } from '../../engines/etcd/certificates.js';
import { encodeSecretValue } from '../../engines/etcd/secret-data.js';
import type { CachedObject } from '../../kube/informer.js';

const config = loadDefaultConfig();
const identity = clusterIdentity('orders', config);
const DAY_MS = 86_400_000;
const issuedAt = new Date('2026-01-01T00:00:00Z');

const asCached = (name: string, data: Readonly<Record<string, string>>): CachedObject => ({
  apiVersion: 'v1', kind: 'Secret', metadata: { name, namespace: 'shop', resourceVersion: '7' },
  data: Object.fromEntries(Object.entries(data).map(([k, v]) => [k, encodeSecretValue(k, v)])),
});

describe('the CertificateExpiring condition', () => {
  let secrets: Map<string, CachedObject>;
  const requests: string[] = [];
  const ctx = (nowDays: number) => ({
    now: () => issuedAt.getTime() + nowDays * DAY_MS,
    client: { request: async (method: string, path: string) => { requests.push(`${method} ${path}`); return {}; } },
    log: { info: () => undefined },
  }) as unknown as ReconcileContext;
  const input = (over: Partial<RotationInput> = {}): RotationInput => ({
    tls: tlsAsked({}), identity, namespace: 'shop', config, secret: (name) => secrets.get(name), replicas: 3, detectOnly: false, creating: false,
    clientUrl: (pod) => `https://${pod}.invalid:2379`, ...over,
  });

  beforeAll(async () => {
    const issued = await issueClusterCertificates({ identity, namespace: 'shop', config, now: issuedAt }, { member: true, client: true });
    secrets = new Map([
      ['orders-tls-member', asCached('orders-tls-member', leafSecretData(issued.member!, issued.authority, issued.issuer))],
      ['orders-tls-client', asCached('orders-tls-client', leafSecretData(issued.client!, issued.authority, issued.issuer))],
    ]);
  }, 60_000);

  it('is True, naming what expires when and why it cannot be renewed, once a leaf is due and the CA is missing; nothing is written or dialled', async () => {
    const outcome = await rotateCertificates(ctx(250), input({ problem: 'Secret orders-tls-ca is missing while the members\' certificates exist' }));
    expect(outcome.certificateExpiring).toEqual({
      status: 'True', reason: 'RotationBlocked',
      message: 'the members\' certificate expires 2027-01-01T00:00:00.000Z, the client certificate expires 2027-01-01T00:00:00.000Z and cannot be renewed: Secret orders-tls-ca is missing while the members\' certificates exist',
    });
    expect(outcome.status).toBeUndefined();
    expect(requests).toEqual([]);
  });

  it('is False while the same problem stands but nothing is due yet', async () => {
    expect((await rotateCertificates(ctx(200), input({ problem: 'Secret orders-tls-member: must hold tls.crt, tls.key and ca.crt (PEM); missing tls.key' }))).certificateExpiring)
      .toEqual({ status: 'False', reason: 'AsExpected', message: 'no certificate is due for renewal' });
  });

  it('says nothing for a cluster whose certificates the controller does not issue', async () => {
    expect(await rotateCertificates(ctx(250), input({ tls: { mode: 'disabled', peer: false, client: false } }))).toEqual({});
  });
});
