/**
 * Which runner takes a cluster's backups: `dkv backup` (etcd's protocol:
 * a snapshot over etcd's client API) from the configuration's runner image,
 * or a runner of the user's own named by `spec.backup.backupImage`. The
 * validator (a generic-engine cluster with backups must name its own) and
 * the CronJob (what it runs) decide by this one rule.
 */

/**
 * The image the spec's backupImage defaulted to before `dkv backup` existed:
 * a placeholder that never named a working runner. Clusters stored with it
 * run `dkv backup`, as if they named none.
 */
export const FORMER_PLACEHOLDER_IMAGE = 'registry.example.com/dkv/backup:1.0.0';

/** The spec's own backup runner; undefined: `dkv backup` runs. */
export function ownBackupRunner(backup: { readonly backupImage?: string }): string | undefined {
  return backup.backupImage && backup.backupImage !== FORMER_PLACEHOLDER_IMAGE ? backup.backupImage : undefined;
}
