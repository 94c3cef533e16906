/**
 * What the schema cannot say about spec.maintenance, checked by
 * validateDistributedKV (so `dkv validate`, `dkv synth` and the controller
 * refuse the same specs, naming the field):
 *
 * - a defragmentation window whose schedule runs a range backwards (the
 *   schema's pattern bounds every value; cron.ts finds the rest);
 * - a compaction retention etcd would read otherwise than meant (a duration
 *   in mode revision: engines/etcd/compaction.ts);
 * - a quota that leaves no room on the member's volume for etcd's
 *   write-ahead log and snapshots: the database would fill the volume
 *   (ENOSPC, a crashed member) before etcd's NOSPACE alarm could stop the
 *   writes;
 * - a quota of 0, which etcd reads as its own default (2 GiB), whatever the
 *   volume.
 *
 * A quota above etcd's recommended 8 GiB is not refused (etcd runs it, and
 * logs a warning): quotaWarning says so, as `dkv validate` prints it.
 */
import type { DistributedKVSpec } from '../imports/distributedkv.js';
import { retentionProblem } from '../engines/etcd/compaction.js';
import { RECOMMENDED_MAX_QUOTA_BYTES, volumeBytes } from '../model/backend-quota.js';
import type { EngineName } from '../model/generator-config.js';
import { quantityValue } from '../model/quantity.js';
import { cronProblems } from './cron.js';
import type { FieldProblem } from './schema-errors.js';

const MAINTENANCE = ['spec', 'maintenance'] as const;
const SCHEDULE = [...MAINTENANCE, 'defragmentation', 'window', 'schedule'];
const RETENTION = [...MAINTENANCE, 'compaction', 'retention'];
const QUOTA = [...MAINTENANCE, 'quota'];

/** Every problem of `spec.maintenance` beyond the schema's; `reported` are the schema's, so that no field is reported twice. */
export function maintenanceProblems(spec: Record<string, any> | undefined, engine: EngineName, reported: readonly FieldProblem[]): FieldProblem[] {
  const maintenance = spec?.maintenance;
  if (typeof maintenance !== 'object' || maintenance === null) return [];
  const isReported = (segments: readonly string[]) => reported.some((p) => p.segments.join('.') === segments.join('.'));
  // A field of a newer version than the document's is reported as such, and nothing inside it.
  if (isReported(MAINTENANCE)) return [];
  const problems: FieldProblem[] = [];
  const schedule = maintenance.defragmentation?.window?.schedule;
  if (typeof schedule === 'string' && !isReported(SCHEDULE)) {
    for (const message of cronProblems(schedule)) problems.push({ segments: SCHEDULE, message });
  }
  const { mode, retention } = maintenance.compaction ?? {};
  if (engine === 'etcd' && typeof retention === 'string' && !isReported(RETENTION) && !isReported([...MAINTENANCE, 'compaction', 'mode'])) {
    const problem = retentionProblem(mode, retention);
    if (problem) problems.push({ segments: RETENTION, message: problem });
  }
  const quota = typeof maintenance.quota === 'string' && !isReported(QUOTA) ? quantityValue(maintenance.quota) : undefined;
  const size = spec?.storage?.size;
  if (quota === 0) {
    problems.push({ segments: QUOTA, message: `must be more than 0 (got ${JSON.stringify(maintenance.quota)}): etcd reads a quota of 0 as its own default, 2Gi, whatever the volume; leave quota unset (half the volume, at most 8Gi)` });
  } else if (quota !== undefined && typeof size === 'string' && !isReported(['spec', 'storage', 'size'])) {
    const volume = volumeBytes(spec as DistributedKVSpec);
    const room = walRoomBytes(volume);
    if (quota > volume - room) {
      problems.push({
        segments: QUOTA,
        message: `must be at most storage.size (${size}) less ${mib(room)} for etcd's write-ahead log and snapshots, ${mib(volume - room)} (got ${JSON.stringify(maintenance.quota)}): `
          + 'the database would fill the volume before etcd\'s NOSPACE alarm stopped the writes; leave quota unset (half the volume, at most 8Gi) or grow storage.size',
      });
    }
  }
  return problems;
}

/** etcd keeps 5 write-ahead log files of 64 MiB: that much of the volume stays free of the database (a quarter of a small one). */
function walRoomBytes(volume: number): number {
  return Math.min(5 * 64 * 2 ** 20, Math.floor(volume / 4));
}

const mib = (bytes: number) => `${Math.floor(bytes / 2 ** 20)}Mi`;

/** A quota etcd runs, but above the size it recommends; undefined otherwise. */
export function quotaWarning(spec: Pick<DistributedKVSpec, 'maintenance'>): string | undefined {
  const quota = spec.maintenance?.quota;
  if (quota === undefined || (quantityValue(quota) ?? 0) <= RECOMMENDED_MAX_QUOTA_BYTES) return undefined;
  return `${quota} is above 8Gi, the most etcd recommends: etcd runs it (and logs a warning), but snapshots, backups, restores, a new member's first sync and defragmentation grow with the database and slow down`;
}
