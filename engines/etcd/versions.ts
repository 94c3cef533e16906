/**
 * Which etcd images the engine can run, and which image changes etcd can
 * take by replacing members one at a time. Pure: `dkv validate` and
 * `dkv synth` check an image offline, the controller also checks a change
 * against the members that run.
 *
 * The rules are etcd's own (etcd.io upgrade and downgrade guides):
 *   - the members' probes use `/livez` and `/readyz`, first released in
 *     3.5.11 (kubeadm requires the same since Kubernetes 1.31);
 *   - a rolling upgrade moves one minor version at a time (3.5 → 3.6), from
 *     the oldest member's version: a member two minors ahead refuses to join;
 *   - the cluster version rises once every member runs the new minor; going
 *     below it then takes etcd's downgrade procedure, never an image change.
 *     Reverting while some member still runs the old minor is a rollback,
 *     which etcd allows (the cluster version has not moved).
 *
 * Only images whose repository is named for etcd (`…/etcd`, `…/etcd-amd64`)
 * are judged, and only when their tag carries a version: a tag of another
 * image (a team's own build, versioned its own way), a digest alone or
 * `latest` says nothing the engine can rely on.
 */

export interface EtcdVersion {
  readonly major: number;
  readonly minor: number;
  readonly patch: number;
}

/** The first etcd release with the `/livez` and `/readyz` endpoints the probes use. */
export const MINIMUM_ETCD_VERSION: EtcdVersion = { major: 3, minor: 5, patch: 11 };

const show = (v: EtcdVersion): string => `${v.major}.${v.minor}.${v.patch}`;
const minorOf = (v: EtcdVersion): string => `${v.major}.${v.minor}`;
const compare = (a: EtcdVersion, b: EtcdVersion): number => a.major - b.major || a.minor - b.minor || a.patch - b.patch;

/** The etcd version an etcd image's tag names (`registry.k8s.io/etcd:3.6.8-0`, `quay.io/coreos/etcd:v3.5.17`), if it names one. */
export function etcdVersionOf(image: string): EtcdVersion | undefined {
  const withoutDigest = image.split('@')[0];
  const lastSegment = withoutDigest.slice(withoutDigest.lastIndexOf('/') + 1);
  const colon = lastSegment.indexOf(':');
  if (colon < 0 || !/^etcd\b/.test(lastSegment.slice(0, colon))) return undefined;
  const match = /^v?(\d+)\.(\d+)\.(\d+)(?:[-+.].*)?$/.exec(lastSegment.slice(colon + 1));
  return match ? { major: Number(match[1]), minor: Number(match[2]), patch: Number(match[3]) } : undefined;
}

/** Why the engine cannot run `image` at all, if it cannot (offline: no cluster needed). */
export function etcdImageProblems(image: string): string[] {
  const version = etcdVersionOf(image);
  if (!version) return [];
  if (version.major !== 3) return [`etcd ${show(version)} is not a version this engine runs (etcd 3.x from ${show(MINIMUM_ETCD_VERSION)})`];
  if (compare(version, MINIMUM_ETCD_VERSION) < 0) {
    return [`etcd ${show(version)} is older than ${show(MINIMUM_ETCD_VERSION)}, the first release with the /livez and /readyz endpoints the members' probes use`];
  }
  return [];
}

/**
 * Why the members running `running` (the live pod template's image and each
 * member pod's) cannot move to `target` by restarting one member at a time,
 * if they cannot.
 */
export function etcdImageChangeProblem(target: string, running: readonly string[]): string | undefined {
  const to = etcdVersionOf(target);
  const versions = running.map(etcdVersionOf).filter((v): v is EtcdVersion => v !== undefined);
  if (!to || versions.length === 0) return undefined;
  const oldest = versions.reduce((a, b) => (compare(a, b) <= 0 ? a : b));
  const newest = versions.reduce((a, b) => (compare(a, b) >= 0 ? a : b));
  if (to.major !== oldest.major) return `etcd ${show(oldest)} cannot be replaced by ${show(to)}: a rolling change stays within one major version`;
  if (to.minor > oldest.minor + 1) {
    return `etcd upgrades one minor version at a time: the oldest member runs ${show(oldest)}, so ${show(to)} must wait until every member runs ${oldest.major}.${oldest.minor + 1}`;
  }
  // Every member runs a newer minor: the cluster version has moved past the target.
  if (to.minor < oldest.minor) {
    return `every member runs etcd ${minorOf(oldest)} or later (up to ${show(newest)}), so the cluster version is ${minorOf(oldest)}: going back to ${show(to)} takes etcd's downgrade procedure, not an image change`;
  }
  return undefined;
}
