/**
 * The certificate rotation of one reconcile (spec.tls mode `operator`): runs
 * the rotation step (day2/certificate-rotation-step.ts) on the cluster's
 * three TLS Secrets once they exist and are sound, writes the Secrets it
 * changes, and says whether a certificate is running out with nothing able
 * to renew it (the CertificateExpiring condition).
 *
 * Each Secret is replaced whole with the resourceVersion it was read at as a
 * precondition (secret-updates.ts): a Secret someone changed since is not
 * written over (409), and the next reconcile decides again.
 * Nothing here runs for a detect-only cluster, nor while the TLS step
 * reported a problem (a Secret of the wrong shape, the CA missing): then the
 * certificates are left as they are, and the condition says so once one is
 * due.
 */
import type { DistributedKVStatus } from '../../imports/distributedkv.js';
import type { CachedObject } from '../../kube/informer.js';
import type { ClusterIdentity } from '../../model/cluster-identity.js';
import type { GeneratorConfig } from '../../model/generator-config.js';
import { describeCertificate, splitBundle } from '../../model/certificates.js';
import { needsCertificates, type TlsInEffect } from '../../model/tls.js';
import { renewalDue } from '../../engines/etcd/certificate-rotation.js';
import { decodeSecretData } from '../../engines/etcd/secret-data.js';
import { memberName } from '../../engines/etcd/peer-urls.js';
import { probeMember } from '../../engines/etcd/tls-probe.js';
import { tlsSecretNames } from '../../engines/etcd/tls-files.js';
import { certificateRotationStep, type ReadSecret, type RotationStatus } from '../day2/certificate-rotation-step.js';
import type { ObservedState } from './status.js';
import { updateSecret } from './secret-updates.js';
import type { ReconcileContext } from './reconcile-context.js';

/** The longest a reconcile waits for a renewal time: timers cannot wait for months, and a relist comes sooner anyway. */
export const LONGEST_WAIT_MS = 12 * 3_600_000;

export interface RotationOutcome {
  readonly status?: RotationStatus;
  readonly rotated?: string;
  readonly certificateExpiring?: ObservedState['certificateExpiring'];
  readonly requeueAfterMs?: number;
}

export interface RotationInput {
  readonly tls: TlsInEffect;
  readonly identity: ClusterIdentity;
  readonly namespace: string;
  readonly config: GeneratorConfig;
  readonly secret: (name: string) => CachedObject | undefined;
  /** Member pods the StatefulSet has (its replicas). */
  readonly replicas: number;
  readonly detectOnly: boolean;
  /** What the TLS step could not use or create this reconcile. */
  readonly problem?: string;
  /** Secrets the TLS step is creating this reconcile: the rotation waits for the next. */
  readonly creating: boolean;
  readonly requested?: string;
  readonly clientUrl: (pod: string) => string;
}

export async function rotateCertificates(ctx: ReconcileContext, input: RotationInput): Promise<RotationOutcome> {
  const { tls, config, identity, namespace } = input;
  if (tls.mode !== 'operator' || !needsCertificates(tls)) return {};
  const names = tlsSecretNames(config, identity);
  const read = (name: string): ReadSecret | undefined => {
    const cached = input.secret(name);
    return cached && { name, resourceVersion: cached.metadata.resourceVersion ?? '', data: decodeSecretData(cached.data as Record<string, string> | undefined) };
  };
  const [authority, member, client] = [read(names.authority), read(names.member), read(names.client)];
  const fraction = config.tls.renewalFraction;
  const now = new Date(ctx.now());
  if (input.problem || !authority || !member || !client) {
    // Rotation cannot proceed: is anything running out meanwhile?
    const due = ([['CA', authority?.data['ca.crt']], ['members\'', member?.data['tls.crt']], ['client', client?.data['tls.crt']]] as const)
      .map(([which, pem]) => [which, pem ? describeCertificate(pem) : undefined] as const)
      .filter(([, d]) => d && renewalDue(d, now, fraction));
    if (due.length === 0) return { certificateExpiring: { status: 'False', reason: 'AsExpected', message: 'no certificate is due for renewal' } };
    const what = due.map(([which, d]) => `the ${which} certificate expires ${d!.notAfter.toISOString()}`).join(', ');
    const why = input.problem ?? (input.creating ? 'its Secrets are being issued' : 'a TLS Secret is missing');
    return { certificateExpiring: { status: input.creating ? 'False' : 'True', reason: input.creating ? 'Issuing' : 'RotationBlocked', message: `${what} and cannot be renewed: ${why}` } };
  }
  if (input.detectOnly || input.creating) return {};
  const decision = await certificateRotationStep({
    identity, namespace, config, authority, member, client, requested: input.requested, now,
    members: Array.from({ length: input.replicas }, (_, i) => memberName(identity, i)).map((pod) => ({ pod, clientUrl: input.clientUrl(pod) })),
    probe: (url, clientTls) => probeMember(url, clientTls, ctx.memberTimeoutMs ?? 3000),
  });
  for (const update of decision.update) await updateSecret(ctx, input.secret(update.name)!, update);
  if (decision.done) ctx.log.info('tls: rotation', { key: `${namespace}/${identity.name}`, done: decision.done });
  const leafDue = [member, client].some((s) => { const d = describeCertificate(splitBundle(s.data['tls.crt'])[0] ?? ''); return d && renewalDue(d, now, fraction); });
  return {
    status: decision.status,
    rotated: decision.done,
    certificateExpiring: { status: 'False', reason: leafDue || decision.update.length > 0 ? 'Renewing' : 'AsExpected', message: leafDue || decision.update.length > 0 ? 'a certificate due for renewal is being renewed' : 'no certificate is due for renewal' },
    requeueAfterMs: decision.requeueAfterMs === undefined ? undefined : Math.min(decision.requeueAfterMs, LONGEST_WAIT_MS),
  };
}

/** status.tls with the rotation's fields merged in. */
export const withRotation = (tls: NonNullable<DistributedKVStatus['tls']>, rotation: RotationOutcome): NonNullable<DistributedKVStatus['tls']> => ({ ...tls, ...(rotation.status ?? {}) });
