/**
 * A cluster's s3Path is its own folder: no two clusters may back up into
 * one folder, nor one inside the other, in any namespaces. The rule is a
 * comparison of folders, shared by `dkv validate` and the controller.
 */
import { findS3PathClashes } from '../../constructs/s3-path-clashes.js';
import { backupFolderOf, enclosingFolders, folderOverlap } from '../../model/backup-folder.js';
import { BACKUP, kvDocument, validResource, type ClusterOptions } from './support.js';

const cluster = (options: ClusterOptions, s3Path?: string) => validResource(kvDocument({ ...options, backup: s3Path ? { ...BACKUP, s3Path } : undefined }));

/** Each clash as `first -> second: overlap`. */
const described = (clashes: ReturnType<typeof findS3PathClashes>): string[] =>
  clashes.map(({ first, second, overlap }) => `${first.resource.metadata.namespace}/${first.resource.metadata.name} -> ${second.resource.metadata.namespace}/${second.resource.metadata.name}: ${overlap}`);

describe('a backup folder', () => {
  it('is the s3Path without its scheme, with one trailing slash, however many the user wrote', () => {
    expect(backupFolderOf('s3://acme/shop/orders')).toBe('acme/shop/orders/');
    expect(backupFolderOf('s3://acme/shop/orders//')).toBe('acme/shop/orders/');
    expect(backupFolderOf('s3://acme')).toBe('acme/');
    expect(backupFolderOf('https://acme/x')).toBeUndefined();
    expect(backupFolderOf(undefined)).toBeUndefined();
  });

  it('lies inside each folder above it, up to the bucket', () => {
    expect(enclosingFolders('acme/shop/orders/')).toEqual(['acme/', 'acme/shop/']);
    expect(enclosingFolders('acme/')).toEqual([]);
  });

  it('meets another only at a slash: s3://b/x and s3://b/xy are apart', () => {
    expect(folderOverlap('b/x/', 'b/x/')).toBe('same');
    expect(folderOverlap('b/x/shop/orders/', 'b/x/')).toBe('inside');
    expect(folderOverlap('b/x/', 'b/x/shop/orders/')).toBe('holds');
    expect(folderOverlap('b/xy/', 'b/x/')).toBeUndefined();
    expect(folderOverlap('c/x/', 'b/x/')).toBeUndefined();
  });
});

describe('findS3PathClashes', () => {
  it('finds two clusters backing up into one folder, in any namespaces (a folder is a place in S3)', () => {
    const clashes = findS3PathClashes([cluster({ name: 'orders' }, 's3://acme/x'), cluster({ name: 'carts', namespace: 'staging' }, 's3://acme/x/')]);
    expect(described(clashes)).toEqual(['shop/orders -> staging/carts: same']);
    expect([clashes[0].first.index, clashes[0].second.index]).toEqual([0, 1]);
  });

  it('finds a folder inside another, the case where one cluster\'s legacy <namespace>/<name>/ folder is another\'s own', () => {
    // orders' legacy folder is s3://acme/x/shop/orders/: its retention would count and delete carts' backups.
    expect(described(findS3PathClashes([cluster({ name: 'orders' }, 's3://acme/x'), cluster({ name: 'carts' }, 's3://acme/x/shop/orders')])))
      .toEqual(['shop/orders -> shop/carts: inside']);
    expect(described(findS3PathClashes([cluster({ name: 'carts' }, 's3://acme/x/shop/orders'), cluster({ name: 'orders' }, 's3://acme/x')])))
      .toEqual(['shop/carts -> shop/orders: holds']);
  });

  it('reports every pair once, ordered by the later cluster, against each earlier one', () => {
    const resources = [cluster({ name: 'a' }, 's3://acme/r/x'), cluster({ name: 'b' }, 's3://acme/r/x'), cluster({ name: 'c' }, 's3://acme/r/x'), cluster({ name: 'd' }, 's3://acme/r')];
    expect(described(findS3PathClashes(resources))).toEqual([
      'shop/a -> shop/b: same',
      'shop/a -> shop/c: same', 'shop/b -> shop/c: same',
      'shop/a -> shop/d: holds', 'shop/b -> shop/d: holds', 'shop/c -> shop/d: holds',
    ]);
  });

  it('finds nothing between folders apart, clusters without backups, or one cluster defined twice (the duplicate check\'s)', () => {
    expect(findS3PathClashes([
      cluster({ name: 'a' }, 's3://acme/x'), cluster({ name: 'b' }, 's3://acme/xy'), cluster({ name: 'c' }, 's3://other/x'),
      cluster({ name: 'd' }), cluster({ name: 'e' }), cluster({ name: 'a', size: 5 }, 's3://acme/x'),
    ])).toEqual([]);
  });
});
