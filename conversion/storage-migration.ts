/**
 * Storage version migration, as kube-storage-version-migrator does it: the
 * API server rewrites an object in the storage version only when the object
 * is written, so after an upgrade every DistributedKV is read and written
 * back unchanged (the API server re-encodes it in v1beta1), and only then is
 * the old version dropped from the CRD's status.storedVersions, the API
 * server's record of what may still be in etcd. A version still listed there
 * cannot be removed from the CRD; one dropped too early would leave objects
 * nobody can read.
 *
 * Resumable by construction: storedVersions is only narrowed after every
 * object was written in this run, so a run killed halfway is simply run
 * again (rewriting an object already migrated costs one no-op write). An
 * object changed by someone else in between (409) was written in the
 * storage version by that write; one deleted (404) needs nothing.
 */
import { CRD_NAME, CRD_PATH, PLURAL } from '../api/crd.js';
import { API_GROUP, STORAGE_VERSION } from '../api/versions.js';
import { KubeApiError, type KubeClient } from '../kube/client.js';
import type { Logger } from '../kube/log.js';

const LIST_PATH = `/apis/${API_GROUP}/${STORAGE_VERSION}/${PLURAL}`;

export interface MigrationResult {
  /** storedVersions before the run. */
  readonly storedVersionsBefore: readonly string[];
  /** Objects written back. */
  readonly rewritten: number;
  /** Objects someone else wrote (so stored anew) or deleted in between. */
  readonly skipped: number;
  /** False when there was nothing to do: storedVersions held the storage version alone. */
  readonly migrated: boolean;
}

export interface MigrationOptions {
  readonly client: KubeClient;
  readonly log: Logger;
  /** Objects per list page. */
  readonly pageSize?: number;
  /** Writes in flight at once. */
  readonly concurrency?: number;
  /** Runs even when storedVersions lists the storage version alone. */
  readonly force?: boolean;
}

export async function migrateStorageVersion(options: MigrationOptions): Promise<MigrationResult> {
  const { client, log, pageSize = 500, concurrency = 8 } = options;
  const crd = await client.request('GET', CRD_PATH);
  const storage = (crd.spec?.versions ?? []).find((v: { storage?: boolean }) => v.storage)?.name;
  if (storage !== STORAGE_VERSION) {
    throw new Error(`${CRD_NAME} stores ${storage ?? 'no version'}, this controller ${STORAGE_VERSION}: apply the CRD of this release (dkv install) before migrating`);
  }
  const before: string[] = crd.status?.storedVersions ?? [];
  if (!options.force && before.length === 1 && before[0] === STORAGE_VERSION) {
    return { storedVersionsBefore: before, rewritten: 0, skipped: 0, migrated: false };
  }
  log.info('storage version migration: rewriting every DistributedKV', { storedVersions: before, to: STORAGE_VERSION });
  let rewritten = 0;
  let skipped = 0;
  let continueToken: string | undefined;
  do {
    const page = await client.request('GET', LIST_PATH, { query: { limit: pageSize, continue: continueToken } });
    const items: Record<string, any>[] = page.items ?? [];
    for (let i = 0; i < items.length; i += concurrency) {
      await Promise.all(items.slice(i, i + concurrency).map(async (item) => {
        const { namespace, name } = item.metadata;
        const path = `/apis/${API_GROUP}/${STORAGE_VERSION}/namespaces/${encodeURIComponent(namespace)}/${PLURAL}/${encodeURIComponent(name)}`;
        try {
          // The object as read, resourceVersion included: a write that changes nothing but its encoding.
          await client.request('PUT', path, { body: { ...item, apiVersion: `${API_GROUP}/${STORAGE_VERSION}`, kind: 'DistributedKV' } });
          rewritten++;
        } catch (e) {
          if (e instanceof KubeApiError && (e.status === 409 || e.status === 404)) skipped++;
          else throw e;
        }
      }));
    }
    continueToken = page.metadata?.continue || undefined;
  } while (continueToken);
  // Every object has been written since this CRD made STORAGE_VERSION the storage version.
  const latest = await client.request('GET', CRD_PATH);
  await client.request('PATCH', `${CRD_PATH}/status`, {
    contentType: 'application/json-patch+json',
    body: [
      { op: 'test', path: '/metadata/resourceVersion', value: latest.metadata.resourceVersion },
      { op: 'replace', path: '/status/storedVersions', value: [STORAGE_VERSION] },
    ],
  });
  log.info('storage version migration: done', { rewritten, skipped, storedVersions: [STORAGE_VERSION] });
  return { storedVersionsBefore: before, rewritten, skipped, migrated: true };
}
