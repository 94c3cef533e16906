/**
 * etcd flags whose name depends on the member's etcd version: 3.6 took a
 * number of `--experimental-*` flags out of experiment under a new name
 * (etcd's server/embed/config.go), accepts the old spelling with a warning,
 * and 3.7 is to drop it. An etcd that is given a flag it does not know
 * exits at once ("flag provided but not defined"), so a member's arguments
 * are spelled for the version its image runs.
 *
 * The version comes from spec.image's tag (versions.ts). A tag that names no
 * version (`latest`, a digest alone, a team's own build) gets the old
 * spelling: it is the one every minor this engine runs (3.5 and 3.6, from
 * versions.ts's minimum) accepts. Since the arguments derive from the same
 * image as the container, an upgrade from 3.5 to 3.6 changes both in one
 * pod template, so each member restarts once, with the new image and its
 * new spelling together.
 */
import { etcdVersionOf } from './versions.js';

export interface RenamedFlag {
  /** Its name up to and including 3.5. */
  readonly experimental: string;
  /** Its name from this minor on. */
  readonly stable: string;
  readonly stableFromMinor: number;
}

/** The renamed flags the generated members use. */
export const RENAMED_FLAGS = {
  /** How often the leader compares every member's hash of its keys with its own (a CORRUPT alarm on a difference). */
  corruptCheckTime: { experimental: '--experimental-corrupt-check-time', stable: '--corrupt-check-time', stableFromMinor: 6 },
} as const satisfies Record<string, RenamedFlag>;

/** A flag's name as the etcd of `image` spells it; the old spelling where the tag names no version. */
export function flagName(flag: RenamedFlag, image: string): string {
  const version = etcdVersionOf(image);
  return version && version.minor >= flag.stableFromMinor ? flag.stable : flag.experimental;
}
