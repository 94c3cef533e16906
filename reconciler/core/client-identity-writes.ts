/**
 * Acts on the client-identity step (reconciler/day2/client-identity-step.ts,
 * docs/client-identities.md): lists revoked certificates in the members'
 * CRL, issues the root identity's Secret, renews the
 * certificates that are due, makes its etcd calls as root, then issues each
 * client's Secret whose access etcd now enforces (read back from the store),
 * and only then deletes the Secrets of removed clients, whose etcd user
 * (what their certificate stood for) is gone by then.
 */
import { API_VERSION, KIND } from '../../api/validate.js';
import type { CachedObject } from '../../kube/informer.js';
import { KubeApiError } from '../../kube/client.js';
import type { ClusterIdentity } from '../../model/cluster-identity.js';
import { EtcdAuth } from '../../engines/etcd/etcd-auth.js';
import type { AuthStoreState } from '../../engines/etcd/client-identities.js';
import { tlsAgent } from '../../engines/etcd/etcd-http.js';
import { clientUrl, memberName } from '../../engines/etcd/peer-urls.js';
import { clientIdentityAuth, grantedClientSecrets, type ClientIdentitySecretsDecision } from '../day2/client-identity-step.js';
import { createTlsSecrets } from './execute-writes.js';
import { ClientCertificateLedger } from './client-certificate-ledger.js';
import { LONGEST_WAIT_MS } from './certificate-rotation-writes.js';
import { updateSecret } from './secret-updates.js';
import type { ReconcileContext } from './reconcile-context.js';

/** How soon to look again while authentication waits for root's Secret, or a call failed. */
const AGAIN_MS = 2000;
/** Adding a user with a password, or authenticating, is a bcrypt hash on the member: more than a status call. */
const AUTH_TIMEOUT_MS = 5000;

/** What the first half wrote: names taken by other objects, and the ledger the second half enters its certificates in. */
export interface IssuedClientIdentities {
  readonly taken: readonly string[];
  readonly ledger: ClientCertificateLedger;
}

/**
 * Lists what the step revokes in the members' CRL, then issues the step's
 * Secrets (create-only; a name taken by another object is a problem, never
 * written over) and writes its renewals (each only if the Secret is still
 * as read: one changed since is decided again next time); each certificate
 * is entered in the ledger before its Secret is written.
 */
export async function issueClientIdentitySecrets(
  ctx: ReconcileContext, cr: CachedObject, decision: ClientIdentitySecretsDecision, labels: Readonly<Record<string, string>>, secret: (name: string) => CachedObject | undefined,
  names: { readonly authority: string; readonly member: string },
): Promise<IssuedClientIdentities> {
  const ledger = new ClientCertificateLedger(ctx, secret(names.authority));
  const subject = { apiVersion: API_VERSION, kind: KIND, metadata: cr.metadata };
  const key = `${cr.metadata.namespace}/${cr.metadata.name}`;
  if (decision.revocation) {
    try {
      await ledger.revoke(decision.revocation, secret(names.member));
      const revoked = decision.revocation.revoke;
      if (revoked.length > 0) {
        const message = `listed in the members' revocation list (refused from their next connection): ${revoked.map((r) => `${r.identity}'s certificate ${r.serial} (${WHY[r.why]})`).join(', ')}`;
        ctx.log.info('client identities: revoked certificates', { key, serials: revoked.map((r) => r.serial) });
        await ctx.events.record(subject, 'Normal', 'CertificateRevoked', message);
      }
    } catch (e) {
      if (!(e instanceof KubeApiError && e.status === 409)) throw e;
      ctx.log.info('client identities: a TLS Secret changed since read; the revocation is decided again', { key });
    }
  }
  const taken: string[] = [];
  // Root's first Secret, and the renewals: each certificate in the ledger first (a failed write throws: nothing is handed out).
  await ledger.record([...decision.create.map((c) => c.secret.name), ...decision.renew.map((u) => u.name)].map((n) => decision.issued.get(n)).filter((e) => e !== undefined));
  for (const { secret: issued, labels: own } of decision.create) taken.push(...await createTlsSecrets(ctx, cr, [issued], { ...labels, ...own }));
  const renewed: string[] = [];
  for (const update of decision.renew) {
    try {
      await updateSecret(ctx, secret(update.name)!, update);
      renewed.push(update.name);
    } catch (e) {
      if (!(e instanceof KubeApiError && e.status === 409)) throw e;
    }
  }
  if (renewed.length > 0) {
    const done = `renewed the client certificate in Secret ${renewed.join(', ')} (${Math.round(ctx.config.tls.renewalFraction * 100)}% of its validity had passed, or the members' revocation list names it; the same etcd user)`;
    ctx.log.info('client identities: renewed', { key, secrets: renewed });
    await ctx.events.record(subject, 'Normal', 'CertificateRotation', done);
  }
  return { taken, ledger };
}

const WHY = {
  removed: 'no longer in spec.clients',
  replaced: 'its Secret was issued anew after it went missing',
  renewed: 'replaced by renewal, its grace over',
} as const;

/** When the step wants to look again for its renewals alone: the next one due (capped, as the rotation's wait is). */
export function renewalRecheckMs(decision: ClientIdentitySecretsDecision | undefined, now: number): number | undefined {
  if (!decision) return undefined;
  if (decision.renew.length > 0 || decision.revocation) return AGAIN_MS; // read back, and look at what is due next
  return decision.nextRenewal && Math.min(Math.max(0, decision.nextRenewal.getTime() - now), LONGEST_WAIT_MS);
}

/**
 * The etcd half: reads the authentication store from the first member that
 * answers, makes the decided calls in order, then deletes removed clients'
 * Secrets. Returns when to look again (undefined: all done), having
 * reported what failed.
 */
export async function actOnClientIdentities(
  ctx: ReconcileContext, cr: CachedObject, key: string, decision: ClientIdentitySecretsDecision,
  input: {
    readonly identity: ClusterIdentity; readonly size: number; readonly issued: IssuedClientIdentities; readonly membersRun: boolean; readonly labels: Readonly<Record<string, string>>;
  },
): Promise<number | undefined> {
  const namespace = cr.metadata.namespace!;
  const problems = [
    decision.problem,
    ...input.issued.taken.map((n) => `Secret ${n} exists and is not this cluster's (or not yet in the cache): it is not written over, and authentication waits`),
  ].filter((p): p is string => Boolean(p));
  const root = decision.rootForAuth;
  let again: number | undefined;
  if (decision.active && root && input.membersRun && input.issued.taken.length === 0) {
    const pods = Array.from({ length: input.size }, (_, i) => memberName(input.identity, i));
    const endpoint = (pod: string) => ctx.memberAddresses?.client(namespace, pod, input.identity) ?? clientUrl(input.identity, pod, namespace, ctx.config, true);
    // Members not answering yet (starting, restarting) are waited for, not reported: the membership step reports them.
    const answer = await firstAnswering(pods.map((pod) => new EtcdAuth(endpoint(pod), root, tlsAgent(root), Math.max(ctx.memberTimeoutMs ?? 0, AUTH_TIMEOUT_MS)))).catch((e: Error) => {
      ctx.log.info('client identities: waiting for the members', { key, error: e.message });
      return undefined;
    });
    if (!answer) again = AGAIN_MS;
    else try {
      const { auth, state } = answer;
      const step = await clientIdentityAuth(decision, { state: () => Promise.resolve(state) });
      for (const action of step.actions) await auth.apply(action);
      if (step.actions.length > 0) ctx.log.info('client identities', { key, calls: step.actions.map((a) => a.type) });
      if (decision.createOnceGranted.length > 0) {
        // What etcd enforces now, as it reports it: a certificate is issued only for access already in force.
        const enforced = step.actions.length > 0 ? await auth.state() : state;
        const ready = grantedClientSecrets(decision, enforced);
        const taken: string[] = [];
        await input.issued.ledger.record(ready.map((r) => decision.issued.get(r.secret.name)).filter((e) => e !== undefined));
        for (const { secret, labels } of ready) taken.push(...await createTlsSecrets(ctx, cr, [secret], { ...input.labels, ...labels }));
        problems.push(...taken.map((n) => `Secret ${n} exists and is not this cluster's (or not yet in the cache): it is not written over, and that client gets no certificate`));
        if (ready.length > 0) ctx.log.info('client identities: issued', { key, secrets: ready.map((r) => r.secret.name) });
        if (ready.length < decision.createOnceGranted.length || taken.length > 0) again = AGAIN_MS;
      }
      for (const secret of decision.remove) await deleteSecret(ctx, secret);
      if (decision.remove.length > 0) ctx.log.info('client identities: revoked', { key, secrets: decision.remove.map((s) => s.metadata.name) });
      if (step.again) again = AGAIN_MS;
    } catch (e) {
      problems.push(`client identities: ${(e as Error).message}`);
      again = AGAIN_MS;
    }
  } else if (decision.active && (!input.membersRun || decision.create.length > 0 || decision.createOnceGranted.length > 0)) {
    again = AGAIN_MS;
  }
  const problem = problems.join('; ');
  if (problem) {
    ctx.log.warn('client identities not in effect', { key, problem });
    if (ctx.memory.isNews(key, 'ClientIdentityProblem', problem)) await ctx.events.record({ apiVersion: API_VERSION, kind: KIND, metadata: cr.metadata }, 'Warning', 'ClientIdentityProblem', problem);
  }
  return again;
}

/** The first member whose store answers, and what it listed. */
async function firstAnswering(members: readonly EtcdAuth[]): Promise<{ auth: EtcdAuth; state: AuthStoreState }> {
  const failures: string[] = [];
  for (const auth of members) {
    try {
      return { auth, state: await auth.state() };
    } catch (e) {
      failures.push((e as Error).message);
    }
  }
  throw new Error(`no member answered: ${failures.join('; ')}`);
}

/** Deletes a removed client's Secret, as the cache saw it (uid precondition); one already gone is fine. */
async function deleteSecret(ctx: ReconcileContext, secret: CachedObject): Promise<void> {
  const path = `/api/v1/namespaces/${encodeURIComponent(secret.metadata.namespace!)}/secrets/${encodeURIComponent(secret.metadata.name)}`;
  try {
    await ctx.client.request('DELETE', path, { body: { apiVersion: 'v1', kind: 'DeleteOptions', preconditions: { uid: secret.metadata.uid } } });
  } catch (e) {
    if (!(e instanceof KubeApiError && (e.status === 404 || e.status === 409))) throw e;
  }
}
