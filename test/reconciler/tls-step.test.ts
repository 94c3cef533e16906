/**
 * The TLS step (reconciler/day2/tls-step.ts): which Secrets the controller
 * issues for a cluster, from what its label-selected cache holds, and what
 * it refuses to touch. Real certificates (node-forge), no API server: the
 * step only decides; the core creates.
 */
import { X509Certificate } from 'node:crypto';
import { loadDefaultConfig } from '../../api/config.js';
import { tlsStep, type IssuedSecret, type TlsStepInput } from '../../reconciler/day2/tls-step.js';
import { clusterIdentity } from '../../model/cluster-identity.js';
import { PLAIN, tlsAsked } from '../../model/tls.js';
import { MAX_MEMBERS } from '../../engines/etcd/certificates.js';
import { encodeSecretValue } from '../../engines/etcd/secret-data.js';
import { splitBundle } from '../../model/certificates.js';
import { SCHEMA } from '../../api/validate.js';
import type { CachedObject } from '../../kube/informer.js';

const config = loadDefaultConfig();
const identity = clusterIdentity('orders', config);
const now = new Date('2026-11-26T12:00:00Z');

/** Secrets as the cache holds them (base64 data), from what a step issued. */
function cached(secrets: readonly IssuedSecret[]): Map<string, CachedObject> {
  return new Map(secrets.map((s) => [s.name, {
    apiVersion: 'v1', kind: 'Secret', metadata: { name: s.name, namespace: 'shop' },
    data: Object.fromEntries(Object.entries(s.data).map(([k, v]) => [k, encodeSecretValue(k, v)])),
  }]));
}

const input = (secrets: Map<string, CachedObject>, overrides: Partial<TlsStepInput> = {}): TlsStepInput => ({
  tls: tlsAsked({}), identity, namespace: 'shop', config, now, detectOnly: false, secret: (name) => secrets.get(name), ...overrides,
});

describe('the TLS step', () => {
  let issued: readonly IssuedSecret[];
  beforeAll(async () => {
    issued = (await tlsStep(input(new Map()))).create;
  }, 60_000);

  it('issues a new cluster its CA and issuing CA, members\' and client Secrets, in the shape cert-manager writes, the leaves signed by the issuing CA and sent with it, and the members\' (empty) CRL', () => {
    expect(issued.map((s) => [s.name, s.type, Object.keys(s.data).sort()])).toEqual([
      ['orders-tls-ca', 'Opaque', ['ca.crt', 'ca.key', 'issuer.crt', 'issuer.key']],
      ['orders-tls-member', 'kubernetes.io/tls', ['ca.crt', 'crl.der', 'tls.crt', 'tls.key']],
      ['orders-tls-client', 'kubernetes.io/tls', ['ca.crt', 'tls.crt', 'tls.key']],
    ]);
    const ca = new X509Certificate(issued[0].data['ca.crt']);
    const issuer = new X509Certificate(issued[0].data['issuer.crt']);
    expect(issuer.ca && issuer.checkIssued(ca) && issuer.verify(ca.publicKey)).toBe(true);
    for (const leaf of issued.slice(1)) {
      const [cert, sentWith] = splitBundle(leaf.data['tls.crt']);
      expect(new X509Certificate(cert).checkIssued(issuer) && new X509Certificate(cert).verify(issuer.publicKey)).toBe(true);
      expect(new X509Certificate(sentWith).fingerprint256).toBe(issuer.fingerprint256);
      expect(leaf.data['ca.crt']).toBe(issued[0].data['ca.crt']);
    }
  });

  it('names in the members\' certificate every address a member is reached by, for every ordinal the schema allows', () => {
    expect(MAX_MEMBERS).toBe(SCHEMA.definitions.DistributedKVSpec.properties.size.maximum);
    const member = new X509Certificate(issued[1].data['tls.crt']);
    for (let i = 0; i < MAX_MEMBERS; i++) {
      for (const host of [`orders-${i}.orders-peers`, `orders-${i}.orders-peers.shop`, `orders-${i}.orders-peers.shop.svc`, `orders-${i}.orders-peers.shop.svc.cluster.local`]) {
        expect(member.checkHost(host, { subject: 'never' })).toBe(host);
      }
    }
    for (const host of ['orders', 'orders.shop', 'orders.shop.svc', 'orders.shop.svc.cluster.local', 'localhost']) expect(member.checkHost(host, { subject: 'never' })).toBe(host);
    expect(member.checkIP('127.0.0.1')).toBe('127.0.0.1');
    expect(member.checkHost('orders-0.other-peers.shop.svc.cluster.local', { subject: 'never' })).toBeUndefined();
    expect(member.keyUsage).toEqual(expect.arrayContaining(['1.3.6.1.5.5.7.3.1', '1.3.6.1.5.5.7.3.2']));
    const client = new X509Certificate(issued[2].data['tls.crt']);
    expect(client.keyUsage).toEqual(['1.3.6.1.5.5.7.3.2']);
  });

  it('issues nothing more once the cache holds all three, hands the controller the client certificate and reports the expiry dates', async () => {
    const decision = await tlsStep(input(cached(issued)));
    expect(decision.create).toEqual([]);
    expect(decision.problem).toBeUndefined();
    expect(decision.clientTls).toEqual({ ca: issued[2].data['ca.crt'], cert: issued[2].data['tls.crt'], key: issued[2].data['tls.key'] });
    expect(decision.status).toEqual({
      mode: 'operator', peer: true, client: true,
      certificateAuthorityNotAfter: '2036-11-23T12:00:00.000Z', memberCertificateNotAfter: '2027-11-26T12:00:00.000Z', clientCertificateNotAfter: '2027-11-26T12:00:00.000Z',
    });
  });

  it('issues only the missing leaf, from the CA the cluster has', async () => {
    const secrets = cached(issued);
    secrets.delete('orders-tls-client');
    const decision = await tlsStep(input(secrets));
    expect(decision.create.map((s) => s.name)).toEqual(['orders-tls-client']);
    expect(new X509Certificate(decision.create[0].data['tls.crt']).checkIssued(new X509Certificate(issued[0].data['issuer.crt']))).toBe(true);
  });

  it('refuses to issue a new CA while the members\' certificates of the old one exist: they would be locked out', async () => {
    const secrets = cached(issued);
    secrets.delete('orders-tls-ca');
    const decision = await tlsStep(input(secrets));
    expect(decision.create).toEqual([]);
    expect(decision.problem).toMatch(/Secret orders-tls-ca is missing .* lock the members out/);
  });

  it('reports a Secret of the wrong shape and a leaf another CA signed, naming the Secret, and writes nothing', async () => {
    const other = (await tlsStep(input(new Map()))).create;
    const secrets = cached([issued[0], { ...issued[1], data: { 'tls.crt': issued[1].data['tls.crt'] } }, other[2]]);
    const decision = await tlsStep(input(secrets));
    expect(decision.create).toEqual([]);
    expect(decision.problem).toContain('Secret orders-tls-member: must hold tls.crt, tls.key and ca.crt (PEM); missing tls.key, ca.crt');
    expect(decision.problem).toContain('Secret orders-tls-client: tls.crt is not signed by the cluster\'s CA (Secret orders-tls-ca)');
  }, 60_000);

  it('issues nothing for a cluster on plain HTTP, nor in detect-only mode', async () => {
    expect(await tlsStep(input(new Map(), { tls: PLAIN }))).toEqual({ create: [], status: { mode: 'disabled', peer: false, client: false } });
    expect((await tlsStep(input(new Map(), { detectOnly: true }))).create).toEqual([]);
  });
});
