/**
 * The clusters' definitions in S3, on a schedule (configuration
 * `backup.definitions`): what `dkv export` writes, one folder per export,
 *
 *   s3://bucket/prefix/20261123T093000.123Z/<namespace>.<name>.yaml
 *   s3://bucket/prefix/20261123T093000.123Z/manifest.json   (written last)
 *
 * so that the objects a restore or an operator upgrade needs survive the
 * control plane that held them. Files come from the controller's own cache
 * (no extra reads of the API server); the newest `retain` exports are kept.
 *
 * Only the leading controller exports, and only for the term it leads: the
 * schedule is cancelled when the term ends (writers of the shared location
 * across control planes are the subject of active/passive control, not yet
 * built).
 */
import { CronExpressionParser } from 'cron-parser';
import type { ObjectStore } from '../../backup/object-store.js';
import { backupsToDelete } from '../../backup/retention.js';
import { backupStamp, MANIFEST_FILE } from '../../backup/s3-location.js';
import { exportFileName, exportText, type LiveDistributedKV } from '../../api/exported-definition.js';
import type { Clock } from '../../kube/clock.js';
import type { Logger } from '../../kube/log.js';

export interface DefinitionsExport {
  /** Every cluster: as the controller's cache has them, or (a sharded replica, whose cache holds a share) as listed. */
  readonly clusters: () => readonly LiveDistributedKV[] | Promise<readonly LiveDistributedKV[]>;
  readonly store: ObjectStore;
  /** The key prefix of every export's folder, with a trailing slash (or empty for the bucket's root). */
  readonly prefix: string;
  readonly retain: number;
  /** The API server the definitions come from, for each file's header. */
  readonly server: string;
  readonly clock: Clock;
  readonly log: Logger;
}

export interface ExportResult {
  readonly folder: string;
  readonly files: readonly string[];
  /** Export folders the retention deleted. */
  readonly deleted: readonly string[];
}

/** One export of every cluster's definition, then the retention. */
export async function exportDefinitions(run: DefinitionsExport): Promise<ExportResult> {
  const exportedAt = new Date(run.clock.now());
  const stamp = backupStamp(exportedAt);
  const folder = `${run.prefix}${stamp}/`;
  const files: string[] = [];
  for (const cluster of await run.clusters()) {
    const file = exportFileName(cluster);
    await run.store.putText(`${folder}${file}`, exportText(cluster, { server: run.server, exportedAt }), 'application/yaml');
    files.push(file);
  }
  files.sort();
  await run.store.putJson(`${folder}${MANIFEST_FILE}`, { apiVersion: 'dkv.example.com/v1', kind: 'DefinitionsExport', exportedAt: exportedAt.toISOString(), server: run.server, files });
  const deleted: string[] = [];
  for (const old of backupsToDelete(await run.store.listBackups(run.prefix), run.retain)) {
    await run.store.deleteFolder(`${run.prefix}${old.stamp}/`);
    deleted.push(old.stamp);
  }
  return { folder, files, deleted };
}

/** The next time the schedule fires after `now` (ms since the epoch), in UTC. */
export function nextExportAt(schedule: string, now: number): number {
  return CronExpressionParser.parse(schedule, { currentDate: new Date(now), tz: 'UTC' }).next().getTime();
}

/**
 * Exports on the schedule until `term` ends. A failed export is logged and
 * counted, and the next one is tried at its own time: the schedule is the
 * retry.
 */
export function scheduleDefinitionsExports(run: DefinitionsExport, schedule: string, term: AbortSignal, onResult: (result: ExportResult | Error) => void = () => undefined): void {
  const next = (): void => {
    if (term.aborted) return;
    const now = run.clock.now();
    const timer = run.clock.after(Math.max(0, nextExportAt(schedule, now) - now), () => {
      term.removeEventListener('abort', cancel);
      void exportDefinitions(run).then(
        (result) => {
          run.log.info('definitions exported', { folder: result.folder, clusters: result.files.length, deleted: result.deleted });
          onResult(result);
        },
        (e: Error) => {
          run.log.error('definitions export failed', { error: e.message });
          onResult(e);
        },
      ).finally(next);
    });
    const cancel = () => timer.cancel();
    term.addEventListener('abort', cancel, { once: true });
  };
  next();
}
