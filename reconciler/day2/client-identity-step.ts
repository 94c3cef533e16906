/**
 * The Day-2 client-identity step of a reconcile (spec.clients,
 * docs/client-identities.md), in two halves the core acts on:
 *
 * - `clientIdentitySecrets`, before the members' calls: which certificates
 *   enter the members' CRL (client-revocation.ts), which Secrets to
 *   issue (the root identity's now; each client's certificate from the
 *   cluster's CA once etcd enforces what it may do), which certificates to renew (the same subject, so the
 *   same etcd user, once `tls.renewalFraction` of its validity has passed,
 *   as the members' leaves are: certificate-rotation-step.ts), which
 *   removed clients' Secrets go once their etcd user is gone, and the root
 *   identity the controller calls the members as once the Secret is read
 *   back from the cache;
 * - `clientIdentityAuth`, once the members run: the etcd calls that bring
 *   the authentication store to the spec (engines/etcd/client-identities.ts
 *   decides them from what the store lists).
 *
 * Nothing is done half-way: an invalid spec is refused before this step
 * (api/client-problems.ts); Secrets are issued create-only; a Secret is
 * deleted only after its user and role are; authentication is turned on
 * only once root's password is in a Secret the controller has read back, so
 * that no failed write can lock it out; and a client's certificate is
 * issued only once etcd reports authentication on and the client's user and
 * role in place (grantedClientSecrets). Before that, a certificate of the
 * cluster's CA is root in all but name: with authentication off etcd checks
 * nothing, and its holder could even turn authentication on with a root of
 * its own and lock the controller out.
 */
import type { CachedObject } from '../../kube/informer.js';
import type { ClusterIdentity } from '../../model/cluster-identity.js';
import type { GeneratorConfig } from '../../model/generator-config.js';
import type { TlsInEffect } from '../../model/tls.js';
import type { DistributedKVSpec } from '../../imports/distributedkv.js';
import { createLeafCertificate, describeCertificate, signedBy, splitBundle, type KeyedCertificate, type LeafRequest } from '../../model/certificates.js';
import type { EtcdClientTls } from '../../engines/etcd/etcd-http.js';
import { authActions, clientPermission, ROOT, sameRange, type AuthAction, type AuthStoreState, type ClientIdentity } from '../../engines/etcd/client-identities.js';
import { CLIENT_LABEL, clientSecretName, rootSecretName } from '../../engines/etcd/client-identity-secrets.js';
import { clientCertificateRequest, newRootPassword, ROOT_CERTIFICATE_REQUEST } from '../../engines/etcd/client-certificates.js';
import { leafSecretData, REVOCATION_LIST_KEY, revocationListData } from '../../engines/etcd/certificates.js';
import { formatRevoked, nextRenewalCheck, parseRevoked, renewalDue } from '../../engines/etcd/certificate-rotation.js';
import {
  decideClientRevocations, formatLedger, LEDGER_KEY, parseLedger, type HeldCertificate, type IssuedClientCertificate, type RevokedClientCertificate,
} from '../../engines/etcd/client-revocation.js';
import { decodeSecretData } from '../../engines/etcd/secret-data.js';
import { tlsSecretNames } from '../../engines/etcd/tls-files.js';
import type { IssuedSecret } from './tls-step.js';
import type { SecretUpdate } from './certificate-rotation-step.js';

/** A Secret to create, with the labels beyond the cluster's that it carries. */
export interface LabelledSecret {
  readonly secret: IssuedSecret;
  readonly labels: Readonly<Record<string, string>>;
}

export interface ClientIdentitySecretsDecision {
  /** Whether the spec asks for client identities at all (spec.clients set): nothing below applies otherwise. */
  readonly active: boolean;
  readonly clients: readonly ClientIdentity[];
  /** Secrets to create now: the root identity's, when it is missing. */
  readonly create: readonly LabelledSecret[];
  /**
   * Missing clients' Secrets, created only once etcd enforces each client's access (grantedClientSecrets):
   * authentication on, its user holding its role, the role its one permission.
   */
  readonly createOnceGranted: readonly LabelledSecret[];
  /** Removed clients' Secrets (cached objects), deleted once their etcd user and role are gone. */
  readonly remove: readonly CachedObject[];
  /**
   * Certificates due for renewal, re-issued with the same subject (the same
   * etcd user; root's password kept): each Secret's whole new data, written
   * only if it is still at the version read. The certificate it replaces
   * stays valid for clients.supersededGraceSeconds (then the members' CRL
   * lists it), so a client that has not reread its Secret yet goes on working.
   */
  readonly renew: readonly SecretUpdate[];
  /** When the next of these certificates is due, or a renewed one's grace ends (a requeue: nothing else may happen before then). */
  readonly nextRenewal?: Date;
  /**
   * Each certificate about to be handed out (create, createOnceGranted, renew), by its Secret's name: it enters
   * the ledger in the CA Secret before its Secret is written, so that it can always be revoked later.
   */
  readonly issued: ReadonlyMap<string, IssuedClientCertificate>;
  /** Certificates that enter the members' CRL now (client-revocation.ts), and the two Secrets' new data: the CRL first. */
  readonly revocation?: ClientRevocation;
  /** The root identity read back from the cache: the controller's calls go as root (authentication may be on). */
  readonly root?: EtcdClientTls;
  /** The root identity for this reconcile's etcd auth calls: the cached one, or the one just issued (then authentication waits). */
  readonly rootForAuth?: EtcdClientTls;
  /** Something the controller cannot do, in words (a Warning Event). */
  readonly problem?: string;
}

/** The members' CRL grown by client certificates, and the CA Secret's ledger and `revoked` list that say so. */
export interface ClientRevocation {
  readonly revoke: readonly RevokedClientCertificate[];
  /** Written first: once the members read it, the certificates are refused. Absent when nothing is revoked (a ledger tidied alone). */
  readonly member?: SecretUpdate;
  /** Then the CA Secret: the ledger without them, the `revoked` list with them (what a CA rotation's CRL is made from). */
  readonly authority: SecretUpdate;
}

export interface ClientIdentityInput {
  readonly spec: Pick<DistributedKVSpec, 'clients'>;
  readonly tls: TlsInEffect;
  readonly identity: ClusterIdentity;
  readonly config: GeneratorConfig;
  /** A cached Secret of the cluster (its controlling owner) by name. */
  readonly secret: (name: string) => CachedObject | undefined;
  /** The cached Secrets of the cluster that carry CLIENT_LABEL. */
  readonly clientSecrets: () => readonly CachedObject[];
  readonly now: Date;
  readonly detectOnly: boolean;
}

const NONE_ISSUED: ReadonlyMap<string, IssuedClientCertificate> = new Map();
const INACTIVE: ClientIdentitySecretsDecision = { active: false, clients: [], create: [], createOnceGranted: [], remove: [], renew: [], issued: NONE_ISSUED };

const decoded = (secret: CachedObject | undefined): Record<string, string> | undefined =>
  secret && decodeSecretData(secret.data as Record<string, string> | undefined);
const leafOf = (data: Readonly<Record<string, string>> | undefined): string => splitBundle(data?.['tls.crt'] ?? '')[0] ?? '';

const rootIdentity = (data: Record<string, string>): EtcdClientTls | undefined =>
  data['tls.crt'] && data['tls.key'] && data['ca.crt'] && data.password
    ? { ca: data['ca.crt'], cert: data['tls.crt'], key: data['tls.key'], login: { user: data.username || ROOT, password: data.password } }
    : undefined;

/** The first half: the Secrets, and whom the controller calls the members as. */
export async function clientIdentitySecrets(input: ClientIdentityInput): Promise<ClientIdentitySecretsDecision> {
  const { spec, tls, identity, config, now } = input;
  const rootName = rootSecretName(config, identity);
  const cachedRoot = decoded(input.secret(rootName));
  const root = cachedRoot && rootIdentity(cachedRoot);
  // Authentication, once on, stays on (turning it off is not built): a spec without the list revokes every client.
  if (spec.clients === undefined && !cachedRoot) return INACTIVE;
  const dropped = spec.clients === undefined
    ? `spec.clients was removed while etcd authentication is on (Secret ${rootName}): every client is revoked and authentication stays on; set spec.clients: [] to say so (the backup runner needs it to authenticate)`
    : undefined;
  const clients = (spec.clients ?? []).map((c) => ({ name: c.name, prefix: c.prefix, access: c.access ?? 'readWrite' }));
  const wanted = new Set(clients.map((c) => c.name));
  const remove = input.clientSecrets().filter((s) => !wanted.has(s.metadata.labels?.[CLIENT_LABEL] ?? ''));
  if (!(tls.client && tls.mode === 'operator')) {
    return { ...INACTIVE, active: true, clients, problem: 'spec.clients: the members do not run client TLS with operator-issued certificates (status.tls), so they cannot tell clients apart: no identity is issued or granted' };
  }
  if (cachedRoot && !root) return { ...INACTIVE, active: true, clients, problem: `Secret ${rootName}: must hold tls.crt, tls.key, ca.crt, username and password; it is left alone, and authentication is not touched` };

  const authority = decoded(input.secret(tlsSecretNames(config, identity).authority));
  const ca: KeyedCertificate | undefined = authority?.['ca.crt'] && authority['ca.key'] ? { certificate: authority['ca.crt'], privateKey: authority['ca.key'] } : undefined;
  // The CA is the TLS step's to issue: until the cache shows it, nothing is signed.
  if (!ca) return { ...INACTIVE, active: true, clients, remove, root };
  if (root && !signedBy(root.cert, ca.certificate)) return { ...INACTIVE, active: true, clients, problem: `Secret ${rootName}: tls.crt is not signed by the cluster's CA; it is left alone` };
  if (input.detectOnly) return { ...INACTIVE, active: true, clients, root };

  const days = config.clients.certificateValidityDays;
  const create: LabelledSecret[] = [];
  const issued = new Map<string, IssuedClientCertificate>();
  const mint = async (name: string, who: string, request: LeafRequest, renewal: boolean) => {
    const leaf = await createLeafCertificate(ca, request, now, days);
    const { serial, notAfter } = describeCertificate(leaf.certificate)!;
    issued.set(name, { identity: who, serial, notAfter, issuedAt: now, renewal });
    return leaf;
  };
  let rootForAuth = root;
  // Clients' Secrets without root's: authentication was turned on with a password now lost. A new one would not open
  // the store, and would stand in the way of restoring the old Secret: nothing is issued or granted.
  if (!cachedRoot && input.clientSecrets().length > 0) {
    return { ...INACTIVE, active: true, clients, problem: `Secret ${rootName} is missing while client identities exist: etcd authentication is on with the root password it held, which the controller cannot replace; restore that Secret` };
  }
  if (!cachedRoot) {
    const leaf = await mint(rootName, ROOT, ROOT_CERTIFICATE_REQUEST, false);
    const data = { ...leafSecretData(leaf, ca), username: ROOT, password: newRootPassword() };
    create.push({ secret: { name: rootName, type: 'kubernetes.io/tls', data }, labels: {} });
    rootForAuth = rootIdentity(data);
  }
  const missing = clients.filter((c) => !input.secret(clientSecretName(config, identity, c.name)));
  const createOnceGranted: LabelledSecret[] = [];
  for (const c of missing) {
    const name = clientSecretName(config, identity, c.name);
    const leaf = await mint(name, c.name, clientCertificateRequest(c.name), false);
    createOnceGranted.push({ secret: { name, type: 'kubernetes.io/tls', data: leafSecretData(leaf, ca) }, labels: { [CLIENT_LABEL]: c.name } });
  }
  const revocation = await clientRevocation(input, authority!, ca);
  const held = [
    ...(root ? [{ cached: input.secret(rootName)!, who: ROOT, request: ROOT_CERTIFICATE_REQUEST }] : []),
    ...clients.map((c) => ({ cached: input.secret(clientSecretName(config, identity, c.name)), who: c.name, request: clientCertificateRequest(c.name) })),
  ].filter((h): h is { cached: CachedObject; who: string; request: LeafRequest } => h.cached !== undefined);
  const { renew, nextRenewal } = await renewals(held, ca, now, config.tls.renewalFraction, revocation.listed, mint);
  const next = [nextRenewal, revocation.nextAt].filter((d): d is Date => d !== undefined).sort((a, b) => a.getTime() - b.getTime())[0];
  return {
    active: true, clients, create, createOnceGranted, remove, renew, root, rootForAuth, issued, problem: dropped,
    ...(next ? { nextRenewal: next } : {}), ...(revocation.update ? { revocation: revocation.update } : {}),
  };
}

/**
 * What enters the members' CRL now (client-revocation.ts decides), as the
 * two Secret writes that do it, and every serial listed once they are
 * written (a Secret that still holds one is re-issued).
 */
async function clientRevocation(
  input: ClientIdentityInput, authority: Readonly<Record<string, string>>, ca: KeyedCertificate,
): Promise<{ update?: ClientRevocation; listed: ReadonlySet<string>; nextAt?: Date }> {
  const { config, identity, now } = input;
  const names = tlsSecretNames(config, identity);
  const heldBy = (cached: CachedObject | undefined): HeldCertificate | undefined => {
    const validity = cached && describeCertificate(leafOf(decoded(cached)));
    return validity && { serial: validity.serial, notBefore: validity.notBefore, notAfter: validity.notAfter };
  };
  const held = new Map<string, HeldCertificate>();
  const rootHeld = heldBy(input.secret(rootSecretName(config, identity)));
  if (rootHeld) held.set(ROOT, rootHeld);
  for (const s of input.clientSecrets()) {
    const who = s.metadata.labels?.[CLIENT_LABEL];
    const h = heldBy(s);
    if (who && h) held.set(who, h);
  }
  // Root is wanted for as long as authentication is asked for or on: always, here (a Secret just created may not be cached yet).
  const wanted = new Set([ROOT, ...(input.spec.clients ?? []).map((c) => c.name)]);
  const decision = decideClientRevocations({ ledger: parseLedger(authority[LEDGER_KEY]), wanted, held, now, graceMs: config.clients.supersededGraceSeconds * 1000 });
  const already = parseRevoked(authority.revoked);
  const entries = [...already, ...decision.revoke.map((r) => ({ serial: r.serial, notAfter: r.notAfter }))];
  const listed = new Set(entries.map((e) => e.serial));
  const member = input.secret(names.member);
  const cachedAuthority = input.secret(names.authority)!;
  // The CRL is the members' (written by the TLS step first): until the cache shows it, nothing is revoked through it.
  if (!decision.changed || !member) return { listed, nextAt: decision.nextAt };
  const crl = decision.revoke.length > 0 ? await revocationListData(ca, entries, now, config) : undefined;
  return {
    listed, nextAt: decision.nextAt,
    update: {
      revoke: decision.revoke,
      ...(crl === undefined ? {} : { member: { name: names.member, resourceVersion: member.metadata.resourceVersion ?? '', data: { ...decoded(member)!, [REVOCATION_LIST_KEY]: crl } } }),
      authority: {
        name: names.authority, resourceVersion: cachedAuthority.metadata.resourceVersion ?? '',
        data: { ...authority, [LEDGER_KEY]: formatLedger(decision.ledger), revoked: formatRevoked(entries, now) },
      },
    },
  };
}

/**
 * The held certificates whose renewal is due, re-issued from the CA, and
 * when the next of the others is due. A certificate that does not parse is
 * left to the user (it is not ours to guess at); one from another CA is the
 * root check's business above (clients' certificates are the user's to give
 * away: a client Secret whose certificate the CA did not sign is renewed
 * like one that is due, so that the Secret again holds what it should). One
 * the members' CRL lists (a client removed and added again before its
 * Secret went) is issued anew at once.
 */
async function renewals(
  held: readonly { readonly cached: CachedObject; readonly who: string; readonly request: LeafRequest }[], ca: KeyedCertificate, now: Date, fraction: number,
  listed: ReadonlySet<string>, mint: (name: string, who: string, request: LeafRequest, renewal: boolean) => Promise<KeyedCertificate>,
): Promise<{ renew: SecretUpdate[]; nextRenewal?: Date }> {
  const renew: SecretUpdate[] = [];
  const validities = [];
  for (const { cached, who, request } of held) {
    const data = decoded(cached)!;
    const leaf = leafOf(data);
    const validity = describeCertificate(leaf);
    if (!validity) continue;
    const revoked = listed.has(validity.serial);
    if (signedBy(leaf, ca.certificate) && !renewalDue(validity, now, fraction) && !revoked) {
      validities.push(validity);
      continue;
    }
    const fresh = await mint(cached.metadata.name, who, request, !revoked);
    renew.push({ name: cached.metadata.name, resourceVersion: cached.metadata.resourceVersion ?? '', data: { ...data, ...leafSecretData(fresh, ca) } });
  }
  return { renew, nextRenewal: nextRenewalCheck(validities, now, fraction) };
}

/** What the second half needs of the members: their authentication store, as root. */
export interface AuthStoreReader {
  state(): Promise<AuthStoreState>;
}

export interface ClientIdentityAuthDecision {
  /** The calls to make, in order. */
  readonly actions: readonly AuthAction[];
  /** Whether a later reconcile has more to do (authentication held back until root's Secret is read back). */
  readonly again: boolean;
}

/**
 * The second half: the etcd calls from what the store lists. Authentication
 * is enabled as soon as the root identity is read back from the cache,
 * before any client's certificate exists (those wait for it:
 * grantedClientSecrets).
 */
export async function clientIdentityAuth(decision: ClientIdentitySecretsDecision, reader: AuthStoreReader): Promise<ClientIdentityAuthDecision> {
  const state = await reader.state();
  const enable = decision.root !== undefined;
  const actions = authActions(decision.clients, state, enable);
  return { actions, again: !state.enabled && !enable };
}

/**
 * The clients' Secrets that may be created now: those whose access etcd enforces, as its store reports it
 * (read after the calls were made): authentication on, the client's user holding exactly its role, and the
 * role exactly the client's one permission. Any other client waits: its certificate would open more than the spec grants.
 */
export function grantedClientSecrets(decision: ClientIdentitySecretsDecision, state: AuthStoreState): LabelledSecret[] {
  if (!state.enabled) return [];
  const granted = new Set(decision.clients.filter((c) => {
    const user = state.users.find((u) => u.name === c.name);
    const role = state.roles.find((r) => r.name === c.name);
    const permission = clientPermission(c);
    const [held] = role?.permissions ?? [];
    return user?.roles.length === 1 && user.roles[0] === c.name && role?.permissions.length === 1 && sameRange(held, permission) && held.type === permission.type;
  }).map((c) => c.name));
  return decision.createOnceGranted.filter((s) => granted.has(s.labels[CLIENT_LABEL] ?? ''));
}
