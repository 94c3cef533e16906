/**
 * The cert-manager TLS step (reconciler/day2/cert-manager-tls-step.ts) and
 * the refusal of a running cluster's provider change
 * (reconciler/day2/tls-provider-change.ts): the controller issues nothing
 * in mode cert-manager; it waits for the Secrets cert-manager writes, naming
 * the missing one, refuses one of the wrong shape or whose CA did not sign
 * its leaf, naming the key, and hands the client certificate on once they
 * are right. Real certificates, Secrets shaped as cert-manager writes them
 * (test/support/cert-manager-secrets.ts), no API server.
 */
import { loadDefaultConfig, type GeneratorConfig } from '../../api/config.js';
import { CERT_MANAGER_CRD_MISSING, certManagerTlsStep, type CertManagerTlsInput } from '../../reconciler/day2/cert-manager-tls-step.js';
import { tlsProviderChangeRefusal } from '../../reconciler/day2/tls-provider-change.js';
import { clusterIdentity } from '../../model/cluster-identity.js';
import { tlsAsked } from '../../model/tls.js';
import { createCertificateAuthority, notAfter, type KeyedCertificate } from '../../model/certificates.js';
import type { CachedObject } from '../../kube/informer.js';
import { synthesizeCluster } from '../../constructs/synthesize.js';
import { validateDistributedKV, type ValidResource } from '../../api/validate.js';
import { certManagerSecret, secretObject } from '../support/cert-manager-secrets.js';

const base = loadDefaultConfig();
const config: GeneratorConfig = { ...base, tls: { ...base.tls, certManager: { issuerRef: { name: 'shop-ca', kind: 'Issuer', group: 'cert-manager.io' } } } };
const identity = clusterIdentity('orders', config);
const document = { apiVersion: 'example.com/v1beta1', kind: 'DistributedKV', metadata: { name: 'orders', namespace: 'shop' }, spec: { size: 3, image: 'registry.k8s.io/etcd:3.6.8-0', tls: { mode: 'cert-manager' } } };
const resource = (() => {
  const result = validateDistributedKV(document, config);
  if (!result.valid) throw new Error(JSON.stringify(result.problems));
  return result.resource as ValidResource;
})();
const generated = synthesizeCluster(resource, config);
const certificate = (name: string) => generated.find((o) => o.kind === 'Certificate' && o.metadata.name === name)!;

type Secret = Awaited<ReturnType<typeof certManagerSecret>>;
const cache = (...secrets: Secret[]) => new Map<string, CachedObject>(secrets.map((s) => [s.metadata.name, secretObject(s) as unknown as CachedObject]));
const input = (secrets: Map<string, CachedObject>, now = new Date(), certificatesServed = true): CertManagerTlsInput => ({
  tls: tlsAsked(resource.spec), identity, namespace: 'shop', config, secret: (name) => secrets.get(name), now, certificatesServed,
});

describe('the cert-manager TLS step', () => {
  let ca: KeyedCertificate;
  let otherCa: KeyedCertificate;
  let member: Secret;
  let client: Secret;
  beforeAll(async () => {
    [ca, otherCa] = await Promise.all([createCertificateAuthority('shop-ca', new Date(), 365), createCertificateAuthority('elsewhere', new Date(), 365)]);
    [member, client] = await Promise.all([certManagerSecret(certificate('orders-tls-member'), ca), certManagerSecret(certificate('orders-tls-client'), ca)]);
  }, 60_000);

  it('issues nothing, and waits for the Secrets cert-manager has not written, naming each and its issuer; the members are held', () => {
    const none = certManagerTlsStep(input(cache()));
    expect(none.create).toEqual([]);
    expect(none.holdMembers).toBe(true);
    expect(none.condition).toEqual({ status: 'False', reason: 'WaitingForCertManager', message: expect.stringContaining('Secret shop/orders-tls-member and Secret shop/orders-tls-client') });
    expect(none.problem).toContain('cert-manager Issuer/shop-ca');
    const one = certManagerTlsStep(input(cache(member)));
    expect(one.condition?.message).toContain('Secret shop/orders-tls-client (');
    expect(one.condition?.message).not.toContain('orders-tls-member');
    expect(one.clientTls).toBeUndefined();
  });

  it('takes the Secrets cert-manager wrote: the client certificate for the controller\'s calls, the expiry dates and who issues in status.tls', () => {
    const decision = certManagerTlsStep(input(cache(member, client)));
    expect(decision.problem).toBeUndefined();
    expect(decision.holdMembers).toBe(false);
    expect(decision.condition).toEqual(expect.objectContaining({ status: 'True', reason: 'SecretsReady' }));
    expect(decision.clientTls).toEqual({ ca: ca.certificate, cert: client.data['tls.crt'], key: client.data['tls.key'] });
    expect(decision.status).toEqual({
      mode: 'cert-manager', peer: true, client: true, issuedBy: 'cert-manager Issuer/shop-ca',
      certificateAuthorityNotAfter: notAfter(ca.certificate), memberCertificateNotAfter: notAfter(member.data['tls.crt']), clientCertificateNotAfter: notAfter(client.data['tls.crt']),
    });
  });

  it('refuses a Secret of the wrong shape, naming the Secret and the missing key, and holds the members', () => {
    const { 'ca.crt': _, ...withoutCa } = member.data;
    const decision = certManagerTlsStep(input(cache({ ...member, data: withoutCa }, client)));
    expect(decision.holdMembers).toBe(true);
    expect(decision.condition).toEqual(expect.objectContaining({ status: 'False', reason: 'SecretInvalid' }));
    expect(decision.problem).toMatch(/^Secret orders-tls-member: data\.ca\.crt missing or not PEM/);
    expect(decision.clientTls).toBeUndefined();
  });

  it('refuses a leaf its ca.crt did not sign, naming the field', () => {
    const decision = certManagerTlsStep(input(cache({ ...member, data: { ...member.data, 'ca.crt': otherCa.certificate } }, client)));
    expect(decision.problem).toContain('Secret orders-tls-member: data.tls.crt is not signed by the CA in data.ca.crt');
    expect(decision.holdMembers).toBe(true);
  });

  it('refuses a private key that is not the certificate\'s, naming the field', () => {
    const decision = certManagerTlsStep(input(cache({ ...member, data: { ...member.data, 'tls.key': client.data['tls.key'] } }, client)));
    expect(decision.problem).toContain('Secret orders-tls-member: data.tls.key is not the private key of the certificate in data.tls.crt');
  });

  it('refuses a client certificate of another CA than the members trust (two issuers): the members would refuse the controller', async () => {
    const stranger = await certManagerSecret(certificate('orders-tls-client'), otherCa);
    const decision = certManagerTlsStep(input(cache(member, stranger)));
    expect(decision.problem).toContain('Secret orders-tls-client: data.tls.crt is not signed by the CA the members trust (data.ca.crt of Secret orders-tls-member)');
  });

  it('says when cert-manager has not renewed a certificate in time (CertificateExpiring), naming it, its Certificate and the issuer; not before half the time from its renewal point to its expiry', async () => {
    // Leaves of 90 days and a CA of 365, renewed at two thirds of their life (tls.renewalFraction): a leaf from day 60, so overdue from day 75.
    const issued = new Date('2026-01-01T00:00:00Z');
    const day = (n: number) => new Date(issued.getTime() + n * 86_400_000);
    const authority = await createCertificateAuthority('shop-ca', issued, 365);
    const [leaf, clientLeaf, renewed] = await Promise.all([
      certManagerSecret(certificate('orders-tls-member'), authority, { now: issued, days: 90 }),
      certManagerSecret(certificate('orders-tls-client'), authority, { now: issued, days: 90 }),
      certManagerSecret(certificate('orders-tls-member'), authority, { now: day(70), days: 90 }),
    ]);
    const expiring = (now: Date, member = leaf) => certManagerTlsStep(input(cache(member, clientLeaf), now)).certificateExpiring;
    expect(expiring(day(1))).toEqual({ status: 'False', reason: 'AsExpected', message: 'no certificate is overdue for renewal by cert-manager' });
    // Due for renewal since day 60: cert-manager renews at once, a failing one is not yet called out.
    expect(expiring(day(74))?.status).toBe('False');
    const overdue = expiring(day(76))!;
    expect(overdue).toMatchObject({ status: 'True', reason: 'NotRenewed' });
    expect(overdue.message).toContain(`the members' certificate (Secret orders-tls-member) expires ${day(90).toISOString().slice(0, 10)}`);
    expect(overdue.message).toContain('kubectl describe certificate orders-tls-member -n shop, and cert-manager Issuer/shop-ca');
    expect(overdue.message).toContain('the client certificate (Secret orders-tls-client) expires');
    expect(overdue.message).not.toContain('CA certificate');
    // Once cert-manager renewed the members' certificate, only the client's is named.
    const one = expiring(day(76), renewed)!;
    expect(one.status).toBe('True');
    expect(one.message).not.toContain('orders-tls-member)');
    expect(one.message).toContain('orders-tls-client');
    expect(expiring(day(91))!.message).toContain(`the members' certificate (Secret orders-tls-member) expired ${day(90).toISOString().slice(0, 10)}`);
    // The issuer's CA (365 days: due from day 243, overdue from day 304) is the issuer's to renew, and the members restart to trust a new one.
    const ca = certManagerTlsStep(input(cache(renewed, await certManagerSecret(certificate('orders-tls-client'), authority, { now: day(300), days: 90 })), day(305))).certificateExpiring!;
    expect(ca.status).toBe('True');
    expect(ca.message).toMatch(/^the members' certificate .* expired .*; the issuer's CA certificate \(ca\.crt of Secret orders-tls-member\) expires .*: renew the CA of cert-manager Issuer\/shop-ca, then restart the members/);
  }, 60_000);

  it('where cert-manager is not installed (no Certificate kind served), withholds the Certificates and says so instead of waiting for Secrets that cannot come; Secrets already written are still used', () => {
    const none = certManagerTlsStep(input(cache(), new Date(), false));
    expect(none.withholdCertificates).toBe(true);
    expect(none.holdMembers).toBe(true);
    expect(none.condition).toEqual({ status: 'False', reason: 'CertManagerCRDMissing', message: CERT_MANAGER_CRD_MISSING });
    expect(none.problem).toBe(CERT_MANAGER_CRD_MISSING);
    expect(CERT_MANAGER_CRD_MISSING).toMatch(/^spec\.tls\.mode is cert-manager, but the API server serves no cert-manager\.io\/v1 Certificate: install cert-manager/);
    // A running cluster whose cert-manager went away: its members keep running on the Secrets, the controller still calls them.
    const running = certManagerTlsStep(input(cache(member, client), new Date(), false));
    expect(running.withholdCertificates).toBe(true);
    expect(running.holdMembers).toBe(false);
    expect(running.clientTls).toEqual({ ca: ca.certificate, cert: client.data['tls.crt'], key: client.data['tls.key'] });
    expect(running.condition?.reason).toBe('CertManagerCRDMissing');
    // Served: nothing withheld.
    expect(certManagerTlsStep(input(cache(member, client))).withholdCertificates).toBe(false);
    expect(certManagerTlsStep(input(cache())).withholdCertificates).toBe(false);
    // Plain listeners need no Certificate, served or not.
    const plain = certManagerTlsStep({ ...input(cache(), new Date(), false), tls: tlsAsked({ tls: { mode: 'cert-manager', peer: { enabled: false }, client: { enabled: false } } }) });
    expect(plain).toMatchObject({ withholdCertificates: false, holdMembers: false });
    expect(plain.condition).toBeUndefined();
  });

  it('needs no Secret for a cluster whose listeners both run plain', () => {
    const decision = certManagerTlsStep({ ...input(cache()), tls: tlsAsked({ tls: { mode: 'cert-manager', peer: { enabled: false }, client: { enabled: false } } }) });
    expect(decision.holdMembers).toBe(false);
    expect(decision.problem).toBeUndefined();
    expect(decision.condition).toBeUndefined();
  });
});

describe('a running cluster\'s certificate provider', () => {
  const statefulSet = (tls: 'plain' | 'operator' | 'cert-manager'): CachedObject => {
    const args = tls === 'plain'
      ? ['--listen-peer-urls=http://0.0.0.0:2380', '--listen-client-urls=http://0.0.0.0:2379']
      : ['--listen-peer-urls=https://0.0.0.0:2380', '--listen-client-urls=https://0.0.0.0:2379', ...(tls === 'operator' ? ['--client-crl-file=/etc/dkv/tls/member/crl.der'] : [])];
    return { apiVersion: 'apps/v1', kind: 'StatefulSet', metadata: { name: 'orders' }, spec: { template: { spec: { containers: [{ args }] } } } } as CachedObject;
  };
  const cmSecret = { apiVersion: 'v1', kind: 'Secret', metadata: { name: 'orders-tls-member', annotations: { 'cert-manager.io/certificate-name': 'orders-tls-member' } } } as CachedObject;
  const ours = { apiVersion: 'v1', kind: 'Secret', metadata: { name: 'orders-tls-member' } } as CachedObject;

  it('may be either for a new cluster', () => {
    expect(tlsProviderChangeRefusal({ asked: 'cert-manager', operatorAuthority: false })).toBeUndefined();
    expect(tlsProviderChangeRefusal({ asked: 'operator', operatorAuthority: false, memberSecret: cmSecret })).toBeUndefined();
  });

  it('stays what it is: cert-manager on cert-manager\'s Secrets, operator on the controller\'s', () => {
    expect(tlsProviderChangeRefusal({ asked: 'cert-manager', statefulSet: statefulSet('cert-manager'), operatorAuthority: false, memberSecret: cmSecret })).toBeUndefined();
    expect(tlsProviderChangeRefusal({ asked: undefined, statefulSet: statefulSet('operator'), operatorAuthority: true, memberSecret: ours })).toBeUndefined();
  });

  it('refuses a plain-HTTP cluster moving to cert-manager, naming the field and the migration that exists', () => {
    expect(tlsProviderChangeRefusal({ asked: 'cert-manager', statefulSet: statefulSet('plain'), operatorAuthority: false })).toMatch(/^spec\.tls\.mode: cert-manager: the running members serve plain HTTP.*set mode operator to migrate/);
  });

  it('refuses operator to cert-manager: the members trust the controller\'s CA until they restart', () => {
    for (const [sts, authority] of [[statefulSet('operator'), false], [statefulSet('cert-manager'), true]] as const) {
      expect(tlsProviderChangeRefusal({ asked: 'cert-manager', statefulSet: sts, operatorAuthority: authority, memberSecret: ours })).toMatch(/^spec\.tls\.mode: cert-manager: the running members trust the CA the controller issued/);
    }
  });

  it('refuses cert-manager to operator or to plain HTTP', () => {
    expect(tlsProviderChangeRefusal({ asked: 'operator', statefulSet: statefulSet('cert-manager'), operatorAuthority: false, memberSecret: cmSecret })).toMatch(/^spec\.tls\.mode: operator: .*to the controller's own CA is not built/);
    expect(tlsProviderChangeRefusal({ asked: undefined, statefulSet: statefulSet('cert-manager'), operatorAuthority: false, memberSecret: cmSecret })).toMatch(/^spec\.tls\.mode: operator \(the default\)/);
    expect(tlsProviderChangeRefusal({ asked: 'disabled', statefulSet: statefulSet('cert-manager'), operatorAuthority: false, memberSecret: cmSecret })).toContain('to plain HTTP is not built');
  });
});

