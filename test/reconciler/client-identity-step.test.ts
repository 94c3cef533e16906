/**
 * The client-identity step (reconciler/day2/client-identity-step.ts): which
 * Secrets the controller issues for spec.clients, which removed clients'
 * Secrets go, whom it calls the members as, and when it turns etcd
 * authentication on. Real certificates, no API server: the step decides,
 * the core acts.
 */
import { X509Certificate } from 'node:crypto';
import { loadDefaultConfig } from '../../api/config.js';
import { clientIdentityAuth, clientIdentitySecrets, grantedClientSecrets, type ClientIdentityInput, type ClientIdentitySecretsDecision } from '../../reconciler/day2/client-identity-step.js';
import { tlsStep, type IssuedSecret } from '../../reconciler/day2/tls-step.js';
import { clusterIdentity } from '../../model/cluster-identity.js';
import { PLAIN, tlsAsked } from '../../model/tls.js';
import { CLIENT_LABEL } from '../../engines/etcd/client-identity-secrets.js';
import { clientPermission, type AuthStoreState } from '../../engines/etcd/client-identities.js';
import type { CachedObject } from '../../kube/informer.js';

const config = loadDefaultConfig();
const identity = clusterIdentity('orders', config);
const now = new Date('2026-11-26T12:00:00Z');
const ORDERS = { name: 'app', prefix: '/app/', access: 'readWrite' as const };
const AUDIT = { name: 'audit', prefix: '/audit/', access: 'read' as const };

/** A Secret as the cache holds it (base64 data). */
const cachedSecret = (s: IssuedSecret, labels: Record<string, string> = {}): CachedObject => ({
  apiVersion: 'v1', kind: 'Secret', metadata: { name: s.name, namespace: 'shop', uid: `uid-${s.name}`, resourceVersion: '7', labels },
  data: Object.fromEntries(Object.entries(s.data).map(([k, v]) => [k, Buffer.from(v).toString('base64')])),
});

describe('the client-identity step', () => {
  let tlsSecrets: Map<string, CachedObject>;
  /** What a cluster asking for ORDERS and AUDIT is issued first (keys are slow to make: made once, for every case). */
  let first: ClientIdentitySecretsDecision;
  beforeAll(async () => {
    const issued = (await tlsStep({ tls: tlsAsked({}), identity, namespace: 'shop', config, now, detectOnly: false, secret: () => undefined })).create;
    tlsSecrets = new Map(issued.map((s) => [s.name, cachedSecret(s)]));
    first = await clientIdentitySecrets(input([ORDERS, AUDIT]));
  }, 120_000);

  function input(clients: ClientIdentityInput['spec']['clients'], more: Map<string, CachedObject> = new Map(), overrides: Partial<ClientIdentityInput> = {}): ClientIdentityInput {
    return {
      spec: { clients }, tls: tlsAsked({}), identity, config, now, detectOnly: false,
      secret: (name) => more.get(name) ?? tlsSecrets.get(name),
      clientSecrets: () => [...more.values()].filter((s) => s.metadata.labels?.[CLIENT_LABEL]),
      ...overrides,
    };
  }
  /** Every Secret the decision issues: root's now, the clients' once etcd enforces their access. */
  const issued = (decision: ClientIdentitySecretsDecision) => [...decision.create, ...decision.createOnceGranted];
  /** The cache once the decision's Secrets are created. */
  const after = (decision: ClientIdentitySecretsDecision, more = new Map<string, CachedObject>()) =>
    new Map([...more, ...issued(decision).map((c) => [c.secret.name, cachedSecret(c.secret, c.labels)] as const)]);

  it('does nothing for a cluster without spec.clients', async () => {
    expect(await clientIdentitySecrets(input(undefined))).toEqual({ active: false, clients: [], create: [], createOnceGranted: [], remove: [], renew: [], issued: new Map() });
  });

  it('issues the root identity (no common name, root\'s password) and each client\'s certificate (common name = its etcd user), from the cluster\'s CA', async () => {
    const decision = first;
    // Root's now; the clients' only once etcd enforces what each may do (grantedClientSecrets, below).
    expect(decision.create.map((c) => c.secret.name)).toEqual(['orders-etcd-root']);
    expect(issued(decision).map((c) => [c.secret.name, c.secret.type, Object.keys(c.secret.data).sort(), c.labels])).toEqual([
      ['orders-etcd-root', 'kubernetes.io/tls', ['ca.crt', 'password', 'tls.crt', 'tls.key', 'username'], {}],
      ['orders-client-app', 'kubernetes.io/tls', ['ca.crt', 'tls.crt', 'tls.key'], { [CLIENT_LABEL]: 'app' }],
      ['orders-client-audit', 'kubernetes.io/tls', ['ca.crt', 'tls.crt', 'tls.key'], { [CLIENT_LABEL]: 'audit' }],
    ]);
    const ca = new X509Certificate(Buffer.from(tlsSecrets.get('orders-tls-ca')!.data!['ca.crt'] as string, 'base64'));
    const subjects = issued(decision).map((c) => {
      const cert = new X509Certificate(c.secret.data['tls.crt']);
      expect(cert.checkIssued(ca) && cert.verify(ca.publicKey)).toBe(true);
      return cert.subject;
    });
    expect(subjects).toEqual(['O=dkv-operator', 'CN=app', 'CN=audit']);
    expect(decision.create[0].secret.data.username).toBe('root');
    expect(decision.create[0].secret.data.password).toMatch(/^[A-Za-z0-9_-]{43}$/);
    // Just issued, not yet read back: the auth calls may use it, the members' calls do not yet.
    expect(decision.rootForAuth?.login?.user).toBe('root');
    expect(decision.root).toBeUndefined();
  }, 30_000);

  it('issues nothing more once the Secrets are in the cache, and calls the members as root from then on', async () => {
    const decision = await clientIdentitySecrets(input([ORDERS, AUDIT], after(first)));
    expect(issued(decision)).toEqual([]);
    expect(decision.root).toEqual(decision.rootForAuth);
    expect(decision.root).toMatchObject({ login: { user: 'root', password: first.create[0].secret.data.password } });
  }, 30_000);

  it('renews nothing before the renewal fraction of a certificate\'s validity has passed, and says when the first is due', async () => {
    const decision = await clientIdentitySecrets(input([ORDERS, AUDIT], after(first)));
    expect(decision.renew).toEqual([]);
    const validity = new X509Certificate(issued(first)[1].secret.data['tls.crt']);
    const from = Date.parse(validity.validFrom);
    const due = from + (Date.parse(validity.validTo) - from) * config.tls.renewalFraction;
    expect(Math.abs(decision.nextRenewal!.getTime() - due)).toBeLessThan(2000);
  }, 30_000);

  it('renews the root identity\'s and each client\'s certificate once it is due: the same subject from the same CA, root\'s password kept, written only at the version read', async () => {
    const later = new Date(now.getTime() + 250 * 86_400_000); // 250 of the default 365 days: past two thirds
    const decision = await clientIdentitySecrets(input([ORDERS, AUDIT], after(first), { now: later }));
    expect(decision.create).toEqual([]);
    expect(decision.renew.map((u) => [u.name, u.resourceVersion])).toEqual([['orders-etcd-root', '7'], ['orders-client-app', '7'], ['orders-client-audit', '7']]);
    const ca = new X509Certificate(Buffer.from(tlsSecrets.get('orders-tls-ca')!.data!['ca.crt'] as string, 'base64'));
    decision.renew.forEach((update, i) => {
      const before = new X509Certificate(issued(first)[i].secret.data['tls.crt']);
      const renewed = new X509Certificate(update.data['tls.crt']);
      expect(renewed.subject).toBe(before.subject);
      expect(renewed.checkIssued(ca) && renewed.verify(ca.publicKey)).toBe(true);
      expect(renewed.serialNumber).not.toBe(before.serialNumber);
      expect(Date.parse(renewed.validTo)).toBeGreaterThan(Date.parse(before.validTo));
      expect(update.data['tls.key']).not.toBe(issued(first)[i].secret.data['tls.key']);
    });
    expect(decision.renew[0].data).toMatchObject({ username: 'root', password: first.create[0].secret.data.password });
    // The controller keeps calling the members as root with what the cache holds until the renewal is read back.
    expect(decision.root?.cert).toBe(first.create[0].secret.data['tls.crt']);
  }, 60_000);

  it('renews nothing in detect-only mode, however due', async () => {
    const later = new Date(now.getTime() + 400 * 86_400_000);
    expect((await clientIdentitySecrets(input([ORDERS], after(first), { now: later, detectOnly: true }))).renew).toEqual([]);
  }, 30_000);

  it('lists a removed client\'s Secret for deletion, and no other', async () => {
    const decision = await clientIdentitySecrets(input([ORDERS], after(first)));
    expect(decision.remove.map((s) => s.metadata.name)).toEqual(['orders-client-audit']);
    expect(decision.clients).toEqual([ORDERS]);
  }, 30_000);

  it('enters every certificate it hands out in the ledger first, by its Secret: 90 days, root\'s and each client\'s', () => {
    for (const { secret } of issued(first)) {
      const leaf = new X509Certificate(secret.data['tls.crt']);
      expect(first.issued.get(secret.name)).toEqual({
        identity: secret.name === 'orders-etcd-root' ? 'root' : secret.name.replace('orders-client-', ''),
        serial: leaf.serialNumber.toUpperCase(), notAfter: new Date(leaf.validTo), issuedAt: now, renewal: false,
      });
      expect(Date.parse(leaf.validTo) - Date.parse(leaf.validFrom)).toBeGreaterThanOrEqual(90 * 86_400_000 - 120_000);
      expect(Date.parse(leaf.validTo) - Date.parse(leaf.validFrom)).toBeLessThanOrEqual(90 * 86_400_000 + 120_000);
    }
  });

  it('lists a removed client\'s certificate in the members\' CRL at once, then in the CA Secret (ledger and revoked list)', async () => {
    const secrets = after(first);
    const audit = new X509Certificate(first.createOnceGranted.find((c) => c.labels[CLIENT_LABEL] === 'audit')!.secret.data['tls.crt']);
    const decision = await clientIdentitySecrets(input([ORDERS], secrets));
    const revocation = decision.revocation!;
    expect(revocation.revoke.map((r) => [r.identity, r.serial, r.why])).toEqual([['audit', audit.serialNumber.toUpperCase(), 'removed']]);
    // The CRL names the serial (DER: the serial's bytes), and is the member Secret's whole data otherwise unchanged.
    const crl = Buffer.from(revocation.member!.data['crl.der'], 'latin1');
    expect(crl.includes(Buffer.from(audit.serialNumber.padStart(audit.serialNumber.length + (audit.serialNumber.length % 2), '0'), 'hex'))).toBe(true);
    expect(revocation.member!.resourceVersion).toBe('7');
    expect(revocation.authority.data.revoked).toContain(audit.serialNumber.toUpperCase());
    // The ledger keeps (adopts) the certificates still in use and drops the revoked one.
    expect(revocation.authority.data['client-serials']).not.toContain(audit.serialNumber.toUpperCase());
    expect(revocation.authority.data['client-serials'].trim().split('\n').map((l) => l.split(' ')[0]).sort()).toEqual(['app', 'root']);
    expect(decision.remove.map((s) => s.metadata.name)).toEqual(['orders-client-audit']);
  }, 30_000);

  it('issues anew a certificate the CRL lists (a client removed and added again before its Secret went)', async () => {
    const secrets = after(first);
    const audit = new X509Certificate(first.createOnceGranted.find((c) => c.labels[CLIENT_LABEL] === 'audit')!.secret.data['tls.crt']);
    const authority = tlsSecrets.get('orders-tls-ca')!;
    const revoked = `${audit.serialNumber.toUpperCase()} ${new Date(audit.validTo).toISOString()}\n`;
    const listed = { ...authority, data: { ...authority.data, revoked: Buffer.from(revoked).toString('base64') } };
    const decision = await clientIdentitySecrets(input([ORDERS, AUDIT], new Map([...secrets, ['orders-tls-ca', listed]])));
    expect(decision.renew.map((u) => u.name)).toEqual(['orders-client-audit']);
    expect(decision.issued.get('orders-client-audit')).toMatchObject({ identity: 'audit', renewal: false });
  }, 30_000);

  it('keeps authentication and revokes every client when spec.clients is removed, and says so', async () => {
    const decision = await clientIdentitySecrets(input(undefined, after(first)));
    expect(decision).toMatchObject({ active: true, clients: [], create: [] });
    expect(decision.remove.map((s) => s.metadata.name)).toEqual(['orders-client-app', 'orders-client-audit']);
    expect(decision.root).toBeDefined();
    expect(decision.problem).toMatch(/spec\.clients was removed while etcd authentication is on/);
  }, 30_000);

  it('does not replace a lost root Secret while client identities exist (authentication is on with its password), and says so', async () => {
    const lost = after(first);
    lost.delete('orders-etcd-root');
    const decision = await clientIdentitySecrets(input([ORDERS, AUDIT], lost));
    expect(decision).toMatchObject({ active: true, create: [], remove: [] });
    expect(decision.rootForAuth).toBeUndefined();
    expect(decision.problem).toMatch(/Secret orders-etcd-root is missing while client identities exist/);
  }, 30_000);

  it('issues and grants nothing where the members do not run client TLS, and says why', async () => {
    const decision = await clientIdentitySecrets(input([ORDERS], new Map(), { tls: PLAIN }));
    expect(decision).toMatchObject({ active: true, create: [], remove: [] });
    expect(decision.rootForAuth).toBeUndefined();
    expect(decision.problem).toMatch(/do not run client TLS/);
  });

  it('issues nothing in detect-only mode', async () => {
    expect(issued(await clientIdentitySecrets(input([ORDERS], new Map(), { detectOnly: true })))).toEqual([]);
  });

  it('waits for the CA the TLS step issues', async () => {
    expect(issued(await clientIdentitySecrets(input([ORDERS], new Map(), { secret: () => undefined })))).toEqual([]);
  });

  it('leaves a root Secret of the wrong shape alone, and authentication with it', async () => {
    const broken = cachedSecret({ name: 'orders-etcd-root', type: 'kubernetes.io/tls', data: { 'tls.crt': 'x' } });
    const decision = await clientIdentitySecrets(input([ORDERS], new Map([['orders-etcd-root', broken]])));
    expect(decision).toMatchObject({ create: [], remove: [] });
    expect(decision.rootForAuth).toBeUndefined();
    expect(decision.problem).toMatch(/Secret orders-etcd-root: must hold/);
  });

  describe('turning authentication on', () => {
    const off: AuthStoreState = { enabled: false, users: [], roles: [] };
    const reader = (state: AuthStoreState) => ({ state: () => Promise.resolve(state) });

    it('waits until root\'s Secret is read back from the cache, so that a failed write cannot lock the controller out; then enables before any client has a certificate', async () => {
      const now1 = await clientIdentityAuth(first, reader(off));
      expect(now1.actions.map((a) => a.type)).not.toContain('enable');
      expect(now1.again).toBe(true);
      // Root's Secret read back; no client's Secret exists yet, and enabling does not wait for them.
      const rootOnly = new Map([...after({ ...first, createOnceGranted: [] })]);
      const second = await clientIdentitySecrets(input([ORDERS, AUDIT], rootOnly));
      expect(second.createOnceGranted.map((c) => c.secret.name)).toEqual(['orders-client-app', 'orders-client-audit']);
      const now2 = await clientIdentityAuth(second, reader(off));
      expect(now2.actions.at(-1)).toEqual({ type: 'enable' });
      expect(now2.again).toBe(false);
    }, 30_000);
  });

  describe('a client\'s certificate (grantedClientSecrets)', () => {
    const app = clientPermission({ ...ORDERS });
    const audit = clientPermission({ ...AUDIT });
    const enforced: AuthStoreState = {
      enabled: true,
      users: [{ name: 'root', roles: ['root'] }, { name: 'app', roles: ['app'] }, { name: 'audit', roles: ['audit'] }],
      roles: [{ name: 'root', permissions: [] }, { name: 'app', permissions: [app] }, { name: 'audit', permissions: [audit] }],
    };
    const names = (state: AuthStoreState) => grantedClientSecrets(first, state).map((s) => s.secret.name);

    it('is issued once etcd reports authentication on and the client\'s user holding its role with its one permission', () => {
      expect(names(enforced)).toEqual(['orders-client-app', 'orders-client-audit']);
    });

    it('is not issued while authentication is off: any certificate of the CA would then have full access', () => {
      expect(names({ ...enforced, enabled: false })).toEqual([]);
    });

    it('is not issued while its user, its role or its permission is missing or more than the spec grants', () => {
      const without = (user: string) => ({ ...enforced, users: enforced.users.filter((u) => u.name !== user) });
      expect(names(without('audit'))).toEqual(['orders-client-app']);
      expect(names({ ...enforced, roles: enforced.roles.map((r) => (r.name === 'app' ? { ...r, permissions: [] } : r)) })).toEqual(['orders-client-audit']);
      // A read client whose role still grants readwrite (a change of access not yet made), or a user with a role beyond its own.
      expect(names({ ...enforced, roles: enforced.roles.map((r) => (r.name === 'audit' ? { ...r, permissions: [{ ...audit, type: 'READWRITE' as const }] } : r)) })).toEqual(['orders-client-app']);
      expect(names({ ...enforced, users: enforced.users.map((u) => (u.name === 'app' ? { ...u, roles: ['app', 'root'] } : u)) })).toEqual(['orders-client-audit']);
    });
  });
});
