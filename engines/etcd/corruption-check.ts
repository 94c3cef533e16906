/**
 * etcd's periodic corruption check, as the members run it: every interval
 * the leader asks each member for the hash of its keys at the leader's
 * revision and raises the CORRUPT alarm for one whose hash differs. The
 * alarm is what the controller replaces a corrupt member on at once
 * (replacement.ts); without the check, a member whose database went bad
 * silently would serve its wrong values until something else failed.
 *
 * The interval is the configuration's healing.corruptionCheckSeconds (4
 * hours by default, 0 turns it off): etcd's operations guide recommends "a
 * couple of hours", each pass hashing every member's whole key space.
 *
 * Only the periodic check, not etcd's initial one (a member comparing its
 * hash with the others' before it serves): a member that fails that exits
 * without an alarm, and the controller would replace it only after
 * healing.unhealthySeconds.
 */
import type { MemberContainerProps } from '../engine.js';
import { flagName, RENAMED_FLAGS } from './renamed-flags.js';

/** etcd's flag for it, spelled for spec.image's etcd (renamed-flags.ts); none when the configuration turns it off. */
export function corruptionCheckArgs({ spec, config }: Pick<MemberContainerProps, 'spec' | 'config'>): string[] {
  const seconds = config.healing.corruptionCheckSeconds;
  return seconds > 0 ? [`${flagName(RENAMED_FLAGS.corruptCheckTime, spec.image)}=${seconds}s`] : [];
}
