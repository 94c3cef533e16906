/**
 * Writes the ledger of client identities' certificates in the cluster's CA
 * Secret (engines/etcd/client-revocation.ts): every certificate enters it
 * before its Secret is written, so that none is ever handed out that the
 * controller could not revoke later; and it lists in the members' CRL what
 * the step decided to revoke (the CRL first, then the CA Secret).
 *
 * One reconcile may write the CA Secret twice (a revocation, then the
 * ledger of what it issues): the second write goes with the version the
 * first one returned, not the cache's, which has not seen it yet. Every
 * write has the version read as its precondition (the controller has no
 * `get` on Secrets: the cache and its own writes are what it reads).
 */
import type { CachedObject } from '../../kube/informer.js';
import { formatLedger, LEDGER_KEY, parseLedger, type IssuedClientCertificate } from '../../engines/etcd/client-revocation.js';
import { decodeSecretData } from '../../engines/etcd/secret-data.js';
import type { ClientRevocation } from '../day2/client-identity-step.js';
import type { SecretUpdate } from '../day2/certificate-rotation-step.js';
import { updateSecret } from './secret-updates.js';
import type { ReconcileContext } from './reconcile-context.js';

export class ClientCertificateLedger {
  private authority: CachedObject | undefined;

  constructor(private readonly ctx: Pick<ReconcileContext, 'client'>, authority: CachedObject | undefined) {
    this.authority = authority;
  }

  /** Lists the step's revocations in the members' CRL, then in the CA Secret. Throws what the API server answered (409: changed since read). */
  async revoke(revocation: ClientRevocation, member: CachedObject | undefined): Promise<void> {
    if (revocation.member) await updateSecret(this.ctx, member!, revocation.member);
    await this.write(revocation.authority);
  }

  /** Enters these certificates in the ledger; their Secrets may be written once it returns. */
  async record(entries: readonly IssuedClientCertificate[]): Promise<void> {
    if (entries.length === 0) return;
    const authority = this.authority;
    if (!authority) throw new Error('the cluster\'s CA Secret is not in the cache: no certificate is issued before it can be entered in the ledger');
    const data = decodeSecretData(authority.data as Record<string, string> | undefined);
    const ledger = formatLedger([...parseLedger(data[LEDGER_KEY]), ...entries]);
    await this.write({ name: authority.metadata.name, resourceVersion: authority.metadata.resourceVersion ?? '', data: { ...data, [LEDGER_KEY]: ledger } });
  }

  private async write(update: SecretUpdate): Promise<void> {
    // The cache has not seen this write yet: what the next write of this reconcile builds on is what was written.
    this.authority = await updateSecret(this.ctx, this.authority!, update);
  }
}
