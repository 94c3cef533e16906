/**
 * The Day-2 certificate rotation step (spec.tls mode `operator`,
 * docs/security.md "Rotation"): at most one change per reconcile, decided by
 * engines/etcd/certificate-rotation.ts from the three TLS Secrets and what
 * the members were seen to do, and handed back as Secret updates (the core
 * writes them with resourceVersion preconditions: a Secret changed since it
 * was read is not written over, the next reconcile decides again).
 *
 * In this order, the first that applies:
 *   1. a member Secret without its CRL (issued before rotation existed) gets one;
 *   2. the issuing-CA rotation moves on (start, re-issue, promote, forget), or waits;
 *   3. a leaf whose renewal is due is renewed from the issuer of the moment.
 *
 * The members pick every change up without a restart: the kubelet swaps the
 * mounted Secret's files, and etcd reads its certificate at each new TLS
 * handshake and its CRL at each new connection.
 */
import type { DistributedKVStatus } from '../../imports/distributedkv.js';
import type { ClusterIdentity } from '../../model/cluster-identity.js';
import type { GeneratorConfig } from '../../model/generator-config.js';
import { createLeafCertificate, describeCertificate, signedBy, splitBundle, type KeyedCertificate } from '../../model/certificates.js';
import type { EtcdClientTls } from '../../engines/etcd/etcd-http.js';
import {
  CLIENT_CERTIFICATE_REQUEST, createIssuer, leafSecretData, memberCertificateRequest, REVOCATION_LIST_KEY, revocationListData,
} from '../../engines/etcd/certificates.js';
import {
  caRotationAction, caRotationPhase, formatRevoked, leavesToRenew, nextRenewalCheck, parseRevoked, type MemberObservation, type RotationState,
} from '../../engines/etcd/certificate-rotation.js';
import type { TlsProbe } from '../../engines/etcd/tls-probe.js';

/** A Secret as read: its decoded data and the version the update is conditional on. */
export interface ReadSecret {
  readonly name: string;
  readonly resourceVersion: string;
  readonly data: Readonly<Record<string, string>>;
}

/** A Secret's new data (whole), written only if it still has `resourceVersion`. */
export interface SecretUpdate {
  readonly name: string;
  readonly resourceVersion: string;
  readonly data: Readonly<Record<string, string>>;
}

export interface RotationStepInput {
  readonly identity: Pick<ClusterIdentity, 'statefulSetName' | 'headlessServiceName' | 'clientServiceName'>;
  readonly namespace: string;
  readonly config: Pick<GeneratorConfig, 'clusterDomain' | 'tls'>;
  readonly authority: ReadSecret;
  readonly member: ReadSecret;
  readonly client: ReadSecret;
  /** The member pods and where their client listener is. */
  readonly members: readonly { readonly pod: string; readonly clientUrl: string }[];
  /** The rotate-ca annotation's value on the DistributedKV. */
  readonly requested?: string;
  readonly probe: TlsProbe;
  readonly now: Date;
}

export type RotationStatus = Pick<NonNullable<DistributedKVStatus['tls']>, 'issuerNotAfter' | 'rotation'>;

export interface RotationDecision {
  /** The Secrets to write, in order. */
  readonly update: readonly SecretUpdate[];
  /** What was done, in words (a Normal Event), when something was. */
  readonly done?: string;
  readonly status: RotationStatus;
  /** When to look again with nothing else changing (a phase waiting on the members, or the next renewal). */
  readonly requeueAfterMs?: number;
}

/** How often a phase waiting for the members looks again: the kubelet swaps a mounted Secret's files within about a minute. */
const PHASE_RECHECK_MS = 5_000;

const keyed = (data: Readonly<Record<string, string>>, cert: string, key: string): KeyedCertificate | undefined =>
  data[cert] && data[key] ? { certificate: data[cert], privateKey: data[key] } : undefined;
const leafOf = (data: Readonly<Record<string, string>>) => splitBundle(data['tls.crt'] ?? '')[0] ?? '';
const tlsOf = (data: Readonly<Record<string, string>>): EtcdClientTls => ({ ca: data['ca.crt'], cert: data['tls.crt'], key: data['tls.key'] });
const without = (data: Readonly<Record<string, string>>, ...keys: string[]) => Object.fromEntries(Object.entries(data).filter(([k]) => !keys.includes(k)));

export async function certificateRotationStep(input: RotationStepInput): Promise<RotationDecision> {
  const { config, now, authority, member, client } = input;
  const fraction = config.tls.renewalFraction;
  const root = keyed(authority.data, 'ca.crt', 'ca.key')!;
  const issuer = keyed(authority.data, 'issuer.crt', 'issuer.key');
  const next = keyed(authority.data, 'next-issuer.crt', 'next-issuer.key');
  const retiredProbe = keyed(authority.data, 'retired-probe.crt', 'retired-probe.key');
  const current = issuer ?? root;
  const revoked = parseRevoked(authority.data.revoked);
  const leavesFromNext = next !== undefined && signedBy(leafOf(member.data), next.certificate) && signedBy(leafOf(client.data), next.certificate);
  const state: RotationState = {
    issuer: describeCertificate(current.certificate)!,
    rootIssues: issuer === undefined,
    next: next && { leavesIssued: leavesFromNext },
    retiring: retiredProbe !== undefined,
    requested: input.requested,
    lastRequest: authority.data['rotate-ca'],
  };
  const phase = caRotationPhase(state);
  const status = (waitingFor?: readonly string[], phaseNow = phase): RotationStatus => ({
    ...(issuer ? { issuerNotAfter: describeCertificate(issuer.certificate)!.notAfter.toISOString() } : {}),
    rotation: {
      phase: phaseNow,
      ...(authority.data['rotate-reason'] && phaseNow !== 'Idle' ? { reason: authority.data['rotate-reason'] } : {}),
      ...(waitingFor && waitingFor.length > 0 ? { waitingFor: [...waitingFor] } : {}),
      ...(authority.data['rotate-ca'] ? { lastRequest: authority.data['rotate-ca'] } : {}),
    },
  });
  const crl = (entries: readonly { serial: string; notAfter: Date }[]) => revocationListData(root, entries, now, config);

  // 1. A member Secret issued before rotation existed: its CRL, before anything can be revoked through it.
  if (member.data[REVOCATION_LIST_KEY] === undefined) {
    return { update: [{ ...member, data: { ...member.data, [REVOCATION_LIST_KEY]: await crl(revoked) } }], done: `added the members' revocation list to Secret ${member.name}`, status: status() };
  }

  // 2. The issuing-CA rotation.
  const observations = await observe(input, phase, keyed(authority.data, 'next-probe.crt', 'next-probe.key'), retiredProbe);
  const action = caRotationAction(state, observations, now, fraction);
  const leaf = async (signer: KeyedCertificate, which: 'member' | 'client') => createLeafCertificate(
    signer, which === 'member' ? memberCertificateRequest(input.identity, input.namespace, config) : CLIENT_CERTIFICATE_REQUEST, now, config.tls.certificateValidityDays,
  );
  switch (action.kind) {
    case 'start': {
      const fresh = await createIssuer(root, input.identity, input.namespace, config, now);
      // The certificate the members are dialled with while Trusting, made once (a key and a signature cost the controller's CPU).
      const probe = leafSecretData(await leaf(fresh, 'client'), root, fresh);
      const data = {
        ...authority.data, 'next-issuer.crt': fresh.certificate, 'next-issuer.key': fresh.privateKey, 'rotate-reason': action.why,
        'next-probe.crt': probe['tls.crt'], 'next-probe.key': probe['tls.key'],
        ...(input.requested !== undefined ? { 'rotate-ca': input.requested } : {}),
      };
      const started = status(undefined, 'Trusting');
      const rotation = { ...started.rotation, reason: action.why, ...(input.requested !== undefined ? { lastRequest: input.requested } : {}) };
      return { update: [{ ...authority, data }], done: `started a rotation of the issuing CA: ${action.why}`, status: { ...started, rotation }, requeueAfterMs: 0 };
    }
    case 'reissue': {
      // A root that signed the leaves itself cannot be revoked (the members trust it): the leaves it signed are, by serial.
      const retire = issuer ? '' : formatRevoked([member, client].map((s) => describeCertificate(leafOf(s.data))!).map((d) => ({ serial: d.serial, notAfter: d.notAfter })), now);
      const [memberLeaf, clientLeaf] = await Promise.all([leaf(next!, 'member'), leaf(next!, 'client')]);
      return {
        update: [
          { ...authority, data: { ...without(authority.data, 'next-probe.crt', 'next-probe.key'), ...(retire ? { retire } : {}) } },
          { ...member, data: { ...member.data, ...leafSecretData(memberLeaf, root, next) } },
          { ...client, data: { ...client.data, ...leafSecretData(clientLeaf, root, next) } },
        ],
        done: 'every member accepts the new issuing CA: re-issued the members\' and the client certificate from it',
        status: status(undefined, 'Reissuing'), requeueAfterMs: PHASE_RECHECK_MS,
      };
    }
    case 'promote': {
      // A probe of the old issuer, listed too: the members are seen to refuse it before the rotation ends.
      const probe = await leaf(current, 'client');
      const probeTls = leafSecretData(probe, root, issuer);
      const described = (pem: string) => { const d = describeCertificate(pem)!; return { serial: d.serial, notAfter: d.notAfter }; };
      const entries = [...revoked, ...parseRevoked(authority.data.retire), ...(issuer ? [described(issuer.certificate)] : []), described(probe.certificate)];
      const data = {
        ...without(authority.data, 'next-issuer.crt', 'next-issuer.key', 'retire'),
        'issuer.crt': next!.certificate, 'issuer.key': next!.privateKey, revoked: formatRevoked(entries, now),
        'retired-probe.crt': probeTls['tls.crt'], 'retired-probe.key': probeTls['tls.key'],
      };
      // The CRL first: should the CA Secret's write fail, the next reconcile promotes again, to the same end.
      return {
        update: [{ ...member, data: { ...member.data, [REVOCATION_LIST_KEY]: await crl(entries) } }, { ...authority, data }],
        done: 'every member serves its certificate from the new issuing CA: the old one is revoked (the members\' CRL)',
        status: { ...status(undefined, 'Dropping'), issuerNotAfter: describeCertificate(next!.certificate)!.notAfter.toISOString() }, requeueAfterMs: PHASE_RECHECK_MS,
      };
    }
    case 'forget':
      return {
        update: [{ ...authority, data: without(authority.data, 'retired-probe.crt', 'retired-probe.key', 'rotate-reason') }],
        done: 'every member refuses the old issuing CA: the rotation is complete', status: status(undefined, 'Idle'), requeueAfterMs: 0,
      };
    case 'wait':
      return { update: [], status: status(action.waitingFor), requeueAfterMs: PHASE_RECHECK_MS };
    case 'none':
      break;
  }

  // 3. Leaf renewal, from the issuer the leaves come from now.
  const signer = phase === 'Reissuing' ? next! : current;
  const validity = (s: ReadSecret) => describeCertificate(leafOf(s.data));
  const renew = leavesToRenew({
    member: validity(member) && { validity: validity(member)!, fromIssuer: signedBy(leafOf(member.data), signer.certificate) },
    client: validity(client) && { validity: validity(client)!, fromIssuer: signedBy(leafOf(client.data), signer.certificate) },
  }, now, fraction);
  const chainIssuer = signer === root ? undefined : signer;
  const update: SecretUpdate[] = [];
  for (const which of renew) {
    const secret = which === 'member' ? member : client;
    update.push({ ...secret, data: { ...secret.data, ...leafSecretData(await leaf(signer, which), root, chainIssuer) } });
  }
  const nextCheck = nextRenewalCheck([state.issuer, validity(member), validity(client)].filter((v) => v !== undefined), now, fraction);
  return {
    update,
    ...(renew.length > 0 ? { done: `renewed the ${renew.join(' and the ')} certificate (${Math.round(fraction * 100)}% of its validity had passed)` } : {}),
    status: status(),
    ...(renew.length > 0 ? { requeueAfterMs: 0 } : nextCheck ? { requeueAfterMs: nextCheck.getTime() - now.getTime() } : {}),
  };
}

/** What each member does, as far as the phase needs to know (nothing while Idle). */
async function observe(input: RotationStepInput, phase: ReturnType<typeof caRotationPhase>, nextProbe?: KeyedCertificate, retiredProbe?: KeyedCertificate): Promise<Map<string, MemberObservation>> {
  const { members, probe, client, member } = input;
  const seen = new Map<string, MemberObservation>();
  if (phase === 'Idle') return seen;
  const current = tlsOf(client.data);
  const nextTls = nextProbe && { ca: current.ca, cert: nextProbe.certificate, key: nextProbe.privateKey };
  const memberFingerprint = describeCertificate(leafOf(member.data))?.fingerprint256;
  await Promise.all(members.map(async ({ pod, clientUrl }) => {
    if (phase === 'Trusting' && nextTls) seen.set(pod, { acceptsNext: (await probe(clientUrl, nextTls)).answered });
    if (phase === 'Reissuing') {
      const result = await probe(clientUrl, current);
      seen.set(pod, { servesCurrent: result.answered && result.servedFingerprint === memberFingerprint });
    }
    if (phase === 'Dropping' && retiredProbe) {
      // Refused, not down: the member answers the current certificate on a connection of its own and refuses the probe.
      const [now, retired] = await Promise.all([probe(clientUrl, current), probe(clientUrl, { ca: current.ca, cert: retiredProbe.certificate, key: retiredProbe.privateKey })]);
      seen.set(pod, { refusesRetired: now.answered && !retired.answered });
    }
  }));
  return seen;
}
