/**
 * etcd's auto-compaction, as the members run it (spec.maintenance.compaction):
 * each member discards the history of every key older than the retention by
 * itself, so the database stays bounded with no controller action.
 *
 * Unset, a member keeps one hour of history (`periodic`, `1h`): long enough
 * for a watcher that lost its connection to resume from its last revision,
 * short enough that a steadily updated key costs an hour of versions, not
 * every version ever written. Mode `revision` keeps the last 10,000
 * revisions unless told otherwise (etcd's own example figure).
 *
 * Pure: the generator renders the flags from it, and validation (api/,
 * which may ask engines/etcd/ what etcd accepts) refuses a retention etcd
 * would read otherwise than the user meant.
 */
import type { DistributedKVSpec } from '../../imports/distributedkv.js';

export type CompactionMode = 'periodic' | 'revision';

export interface Compaction {
  readonly mode: CompactionMode;
  readonly retention: string;
}

/** The retention of each mode when the spec names none. */
export const DEFAULT_RETENTION: Readonly<Record<CompactionMode, string>> = { periodic: '1h', revision: '10000' };

/** The mode and retention the members run with: the spec's, or the defaults above. */
export function compaction(spec: Pick<DistributedKVSpec, 'maintenance'>): Compaction {
  const mode = spec.maintenance?.compaction?.mode ?? 'periodic';
  return { mode, retention: spec.maintenance?.compaction?.retention ?? DEFAULT_RETENTION[mode] };
}

/** etcd's flags for it. */
export function compactionArgs(spec: Pick<DistributedKVSpec, 'maintenance'>): string[] {
  const { mode, retention } = compaction(spec);
  return [`--auto-compaction-mode=${mode}`, `--auto-compaction-retention=${retention}`];
}

/**
 * Why etcd would not run the retention as meant, if it would not. The schema
 * already holds it to a whole number or a duration of ms/s/m/h units. In
 * mode `revision` etcd takes a whole number of revisions; given a duration
 * (`1h`) it does not refuse, it reads the duration's nanoseconds as a count
 * (3.6 trillion revisions for `1h`): a member that never compacts.
 */
export function retentionProblem(mode: CompactionMode | undefined, retention: string): string | undefined {
  if (mode === 'revision' && !/^[0-9]+$/.test(retention)) {
    return `mode revision keeps a number of revisions, such as "10000" (got ${JSON.stringify(retention)}, a duration: etcd would read it as its nanoseconds, a count of revisions it never reaches, and never compact); use mode periodic for a duration`;
  }
  return undefined;
}
