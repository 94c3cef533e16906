/**
 * The controller's side of "an s3Path is one cluster's own folder": the
 * index keys a cluster is found under, the rivals a lookup finds, and who
 * keeps a folder two clusters want. Pure: a cluster cache is a map of
 * index keys here.
 */
import type { CachedObject } from '../../kube/informer.js';
import { liveBackupFolder, s3PathClaims, s3PathClash, s3PathRivals } from '../../reconciler/core/s3-path-claims.js';

const cluster = (name: string, s3Path: string | undefined, createdAt = '2026-11-01T00:00:00Z', namespace = 'shop'): CachedObject => ({
  metadata: { name, namespace, uid: `uid-${namespace}-${name}`, creationTimestamp: createdAt },
  spec: s3Path ? { size: 3, backup: { s3Path, schedule: '@daily' } } : { size: 3 },
});

/** A cluster cache's index, as the Informer keeps it. */
function cache(clusters: readonly CachedObject[]) {
  const index = new Map<string, CachedObject[]>();
  for (const c of clusters) for (const key of s3PathClaims(c)) index.set(key, [...(index.get(key) ?? []), c]);
  return { byIndex: (key: string) => index.get(key) ?? [] };
}
const names = (clusters: readonly CachedObject[]) => clusters.map((c) => c.metadata.name).sort();

describe('a cluster\'s claim on its backup folder', () => {
  it('is its folder and every folder around it; none without backups', () => {
    expect(s3PathClaims(cluster('orders', 's3://acme/r/x/'))).toEqual(['s3path:acme/r/x/', 's3path-in:acme/', 's3path-in:acme/r/']);
    expect(s3PathClaims(cluster('sessions', undefined))).toEqual([]);
  });

  it('finds the clusters with the same folder, one around it and one inside it, in any namespace, and none merely sharing the start of a name', () => {
    const self = cluster('self', 's3://acme/r/x');
    const all = [self, cluster('same', 's3://acme/r/x/', undefined, 'other'), cluster('around', 's3://acme/r'), cluster('inside', 's3://acme/r/x/shop/self'),
      cluster('apart', 's3://acme/r/xy'), cluster('sibling', 's3://acme/r/y'), cluster('none', undefined)];
    expect(names(s3PathRivals(cache(all), self))).toEqual(['around', 'inside', 'same']);
  });
});

describe('who keeps a folder two clusters want', () => {
  const older = cluster('older', 's3://acme/x', '2026-11-01T00:00:00Z');
  const newer = cluster('newer', 's3://acme/x', '2026-11-02T00:00:00Z');
  const noCronJob = () => undefined;

  it('the older, when neither backs up there yet', () => {
    const clusters = cache([older, newer]);
    expect(s3PathClash(clusters, older, noCronJob)).toBeUndefined();
    expect(s3PathClash(clusters, newer, noCronJob)).toBe('spec.backup.s3Path: this cluster would back up into s3://acme/x, the folder DistributedKV shop/older backs up into too, which keeps it: '
      + 'an s3Path is one cluster\'s own folder, and each cluster\'s retention would count and delete the other\'s backups; give this cluster a folder apart from every other\'s');
  });

  it('the one whose CronJob already writes there, even when the other is older', () => {
    const clusters = cache([older, newer]);
    const live = (c: CachedObject) => (c === newer ? 'acme/x/' : 'acme/elsewhere/');
    expect(s3PathClash(clusters, older, live)).toMatch(/DistributedKV shop\/newer backs up into too, which keeps it/);
    expect(s3PathClash(clusters, newer, live)).toBeUndefined();
  });

  it('names, of several that keep it, the one whose backups already go there, not one refused itself that the index lists first', () => {
    // orders backs up into acme/x; carts (same folder, created the same second, its name first) is refused and has no CronJob.
    const orders = cluster('orders', 's3://acme/x', '2026-11-01T00:00:00Z');
    const carts = cluster('carts', 's3://acme/x/', '2026-11-01T00:00:00Z');
    const inner = cluster('inner', 's3://acme/x/shop/orders', '2026-11-02T00:00:00Z');
    const live = (c: CachedObject) => (c === orders ? 'acme/x/' : undefined);
    for (const order of [[carts, orders, inner], [orders, carts, inner]]) {
      expect(s3PathClash(cache(order), inner, live)).toMatch(/inside s3:\/\/acme\/x, the folder DistributedKV shop\/orders backs up into, which keeps it/);
    }
  });

  it('the older, when both write there (clusters that shared an s3Path before it was their own folder)', () => {
    const clusters = cache([older, newer]);
    expect(s3PathClash(clusters, older, () => 'acme/x/')).toBeUndefined();
    expect(s3PathClash(clusters, newer, () => 'acme/x/')).toMatch(/shop\/older/);
  });

  it('one of two clusters created in the same second with one name in two namespaces, never both or neither', () => {
    const a = cluster('kv', 's3://acme/x', '2026-11-01T00:00:00Z', 'a');
    const b = cluster('kv', 's3://acme/x', '2026-11-01T00:00:00Z', 'b');
    const clusters = cache([a, b]);
    expect([s3PathClash(clusters, a, noCronJob), s3PathClash(clusters, b, noCronJob)].filter(Boolean)).toHaveLength(1);
  });
});

describe('the folder a cluster backs up into now', () => {
  it('is its own CronJob\'s DKV_S3_PATH, in its namespace', () => {
    const orders = cluster('orders', 's3://acme/new');
    const cronJob = (namespace: string, s3Path: string): CachedObject => ({
      metadata: { name: 'orders-backup', namespace },
      spec: { jobTemplate: { spec: { template: { spec: { containers: [{ env: [{ name: 'DKV_ENDPOINT', value: 'orders:2379' }, { name: 'DKV_S3_PATH', value: s3Path }] }] } } } } },
    });
    const cronJobs = (objects: CachedObject[]) => ({ byIndex: (uid: string) => (uid === orders.metadata.uid ? objects : []) });
    expect(liveBackupFolder(cronJobs([cronJob('shop', 's3://acme/old')]), orders)).toBe('acme/old/');
    expect(liveBackupFolder(cronJobs([cronJob('elsewhere', 's3://acme/old')]), orders)).toBeUndefined();
    expect(liveBackupFolder(cronJobs([]), orders)).toBeUndefined();
    expect(liveBackupFolder(undefined, orders)).toBeUndefined();
  });
});
