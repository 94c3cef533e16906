/**
 * `dkv migrate`: the storage version migration the leading controller runs
 * after an upgrade (conversion/storage-migration.ts), once, from a
 * workstation or a CI job: for clusters whose controller runs with
 * --migrate-storage false, or to see it done before the old version's
 * removal is rolled out.
 */
import { parseArgs } from 'node:util';
import { migrateStorageVersion } from '../conversion/storage-migration.js';
import { KubeClient } from '../kube/client.js';
import { createLogger } from '../kube/log.js';

export const MIGRATE_USAGE = `usage: dkv migrate [--kubeconfig <file>] [--force]
  --kubeconfig <file>   the cluster (default: $KUBECONFIG, ~/.kube/config, or in-cluster)
  --force               rewrite every object even when the CRD's status.storedVersions already lists
                        the storage version alone
Rewrites every DistributedKV in the storage version (a write that changes nothing but its
encoding), then narrows the CRD's status.storedVersions to it. Safe to stop and run again. Objects
stored in another version are read through the conversion webhook: the controller must be running.
Exit codes: 0 migrated (or nothing to do), 1 failed (nothing is lost: run it again), 2 usage error.`;

export async function migrateCommand(args: string[]): Promise<number> {
  const { values } = parseArgs({ args, options: { kubeconfig: { type: 'string' }, force: { type: 'boolean' }, help: { type: 'boolean' } } });
  if (values.help) {
    process.stdout.write(MIGRATE_USAGE + '\n');
    return 0;
  }
  const client = KubeClient.fromKubeconfig(values.kubeconfig);
  try {
    const result = await migrateStorageVersion({ client, log: createLogger(process.env.DKV_LOG_LEVEL ?? 'warn', undefined, 'dkv-migrate'), force: values.force });
    const line = result.migrated
      ? `migrated: ${result.rewritten} rewritten, ${result.skipped} written by others or deleted meanwhile; storedVersions was ${result.storedVersionsBefore.join(', ')}, now the storage version alone\n`
      : 'nothing to migrate: storedVersions lists the storage version alone\n';
    process.stdout.write(line);
    return 0;
  } catch (e) {
    process.stderr.write(`dkv migrate: ${(e as Error).message}\nnothing is lost: run it again once the cause is fixed\n`);
    return 1;
  } finally {
    client.close();
  }
}
