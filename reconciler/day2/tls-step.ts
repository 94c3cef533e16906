/**
 * The Day-2 TLS step of a reconcile (spec.tls mode `operator`,
 * docs/security.md): read the cluster's three TLS Secrets from the
 * label-selected cache, decide which are missing, issue what is missing from
 * the cluster's CA (computation only: the core creates the Secrets,
 * core/execute-writes.ts), and hand back the client certificate the
 * controller calls the members with and what status.tls reports.
 *
 * Create-only: a Secret that exists is never rewritten here (renewing what
 * is due is rotation: certificate-rotation-step.ts). A missing CA with
 * leaves still present is not re-issued (the members trust the old CA:
 * a new one would lock them out); a Secret of the wrong shape, or a leaf the CA did not sign, is
 * reported and left alone. Then the members run on what they have, and the
 * controller calls them with the client certificate if it still fits.
 */
import type { DistributedKVStatus } from '../../imports/distributedkv.js';
import type { CachedObject } from '../../kube/informer.js';
import type { ClusterIdentity } from '../../model/cluster-identity.js';
import type { GeneratorConfig } from '../../model/generator-config.js';
import { needsCertificates, type TlsInEffect } from '../../model/tls.js';
import { chainsTo, notAfter, type KeyedCertificate } from '../../model/certificates.js';
import type { EtcdClientTls } from '../../engines/etcd/etcd-http.js';
import { authoritySecretData, issueClusterCertificates, leafSecretData, REVOCATION_LIST_KEY, revocationListData } from '../../engines/etcd/certificates.js';
import { decodeSecretData } from '../../engines/etcd/secret-data.js';
import { tlsSecretNames } from '../../engines/etcd/tls-files.js';

/** A Secret to create: its name, type and decoded data (the core encodes, labels and owns it). */
export interface IssuedSecret {
  readonly name: string;
  readonly type: 'Opaque' | 'kubernetes.io/tls';
  readonly data: Readonly<Record<string, string>>;
}

export interface TlsDecision {
  /** Secrets to create now. */
  readonly create: readonly IssuedSecret[];
  /** The controller's client certificate for the members (undefined without client TLS, or while it is not issued). */
  readonly clientTls?: EtcdClientTls;
  /** What status.tls reports. */
  readonly status: NonNullable<DistributedKVStatus['tls']>;
  /** A Secret the controller cannot use, in words (a Warning Event and status.tls.reason). */
  readonly problem?: string;
}

export interface TlsStepInput {
  readonly tls: TlsInEffect;
  readonly identity: ClusterIdentity;
  readonly namespace: string;
  readonly config: GeneratorConfig;
  /** A cached Secret of the cluster's namespace by name (the cache holds only Secrets with the cluster labels). */
  readonly secret: (name: string) => CachedObject | undefined;
  readonly now: Date;
  /** Detect-only clusters: nothing is issued. */
  readonly detectOnly: boolean;
}

const decoded = (secret: CachedObject | undefined): Record<string, string> | undefined => secret && decodeSecretData(secret.data as Record<string, string> | undefined);

const missingKeys = (data: Record<string, string>, keys: readonly string[]): string[] => keys.filter((k) => !data[k]?.includes('-----BEGIN'));

export async function tlsStep(input: TlsStepInput): Promise<TlsDecision> {
  const { tls, identity, namespace, config, now } = input;
  const reported = { mode: tls.mode, peer: tls.peer, client: tls.client, ...(tls.reason ? { reason: tls.reason } : {}) };
  if (!needsCertificates(tls)) return { create: [], status: reported };
  const names = tlsSecretNames(config, identity);
  const authority = decoded(input.secret(names.authority));
  const member = decoded(input.secret(names.member));
  const client = decoded(input.secret(names.client));

  const problems: string[] = [];
  if (authority && missingKeys(authority, ['ca.crt', 'ca.key']).length > 0) problems.push(`Secret ${names.authority}: must hold ca.crt and ca.key (PEM); missing ${missingKeys(authority, ['ca.crt', 'ca.key']).join(', ')}`);
  for (const [name, data] of [[names.member, member], [names.client, client]] as const) {
    if (!data) continue;
    const missing = missingKeys(data, ['tls.crt', 'tls.key', 'ca.crt']);
    if (missing.length > 0) problems.push(`Secret ${name}: must hold tls.crt, tls.key and ca.crt (PEM); missing ${missing.join(', ')}`);
    else if (authority?.['ca.crt'] && !chainsTo(data['tls.crt'], authority['ca.crt'])) problems.push(`Secret ${name}: tls.crt is not signed by the cluster's CA (Secret ${names.authority})`);
  }
  if (!authority && (member || client)) problems.push(`Secret ${names.authority} is missing while the members' certificates exist: a new CA would lock the members out; restore the CA Secret (the root CA is not replaced while members trust it: docs/security.md, "Rotation")`);

  const create: IssuedSecret[] = [];
  let ca: KeyedCertificate | undefined = authority?.['ca.crt'] && authority['ca.key'] ? { certificate: authority['ca.crt'], privateKey: authority['ca.key'] } : undefined;
  let clientData = client;
  if (problems.length === 0 && !input.detectOnly && (!authority || !member || !client)) {
    const issuer = authority?.['issuer.crt'] && authority['issuer.key'] ? { certificate: authority['issuer.crt'], privateKey: authority['issuer.key'] } : undefined;
    const issued = await issueClusterCertificates({ identity, namespace, config, now, authority: ca, issuer }, { member: !member, client: !client });
    if (!authority) create.push({ name: names.authority, type: 'Opaque', data: authoritySecretData(issued.authority, issued.issuer) });
    if (issued.member) {
      // The members read their CRL on every connection and refuse every connection while it is missing: they start with an empty one.
      const crl = await revocationListData(issued.authority, [], now, config);
      create.push({ name: names.member, type: 'kubernetes.io/tls', data: { ...leafSecretData(issued.member, issued.authority, issued.issuer), [REVOCATION_LIST_KEY]: crl } });
    }
    if (issued.client) {
      clientData = { ...leafSecretData(issued.client, issued.authority, issued.issuer) };
      create.push({ name: names.client, type: 'kubernetes.io/tls', data: clientData });
    }
    ca = issued.authority;
    const memberData = create.find((s) => s.name === names.member)?.data ?? member;
    return finish(reported, ca, memberData, clientData, create, tls, undefined);
  }
  return finish(reported, ca, member, clientData, create, tls, problems.length > 0 ? problems.join('; ') : undefined);
}

function finish(
  reported: TlsDecision['status'], ca: KeyedCertificate | undefined, member: Readonly<Record<string, string>> | undefined, client: Readonly<Record<string, string>> | undefined,
  create: IssuedSecret[], tls: TlsInEffect, problem: string | undefined,
): TlsDecision {
  const expiry = (pem: string | undefined) => (pem ? notAfter(pem) : undefined);
  const status: NonNullable<DistributedKVStatus['tls']> = { ...reported };
  const caExpiry = expiry(ca?.certificate);
  const memberExpiry = expiry(member?.['tls.crt']);
  const clientExpiry = expiry(client?.['tls.crt']);
  if (caExpiry) status.certificateAuthorityNotAfter = caExpiry;
  if (memberExpiry) status.memberCertificateNotAfter = memberExpiry;
  if (clientExpiry) status.clientCertificateNotAfter = clientExpiry;
  const usable = tls.client && client?.['tls.crt'] && client['tls.key'] && client['ca.crt'];
  return { create, status, problem, clientTls: usable ? { ca: client['ca.crt'], cert: client['tls.crt'], key: client['tls.key'] } : undefined };
}
