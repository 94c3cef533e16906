/**
 * Buckets must agree with kube-apiserver's shardSelector bit for bit: the
 * hash is checked against Go's hash/fnv (the values below were printed by
 * `fnv.New64a()` in Go 1.26), and the selectors against the ranges they
 * must cover. test/integration/sharding.test.ts checks the same against
 * the real API server with the ShardedListAndWatch gate on.
 */
import { bucketLabelSelector, bucketOf, bucketsOwnedBy, fnv1a64, shardSelectorOf, validBucketCount } from '../../kube/shard-buckets.js';

const uids = Array.from({ length: 4000 }, (_, i) => `${(i * 2654435761 >>> 0).toString(16).padStart(8, '0')}-4f89-11d3-9a0c-${i.toString(16).padStart(12, '0')}`);

describe('shard buckets', () => {
  it('hashes as Go\'s FNV-1a 64 does', () => {
    expect(fnv1a64('').toString(16)).toBe('cbf29ce484222325');
    expect(fnv1a64('a').toString(16)).toBe('af63dc4c8601ec8c');
    expect(fnv1a64('3f2504e0-4f89-11d3-9a0c-0305e82c3301').toString(16)).toBe('a6fbb9057c9867a0');
    expect(fnv1a64('ünï').toString(16)).toBe('8406649dfd5e4e56'); // UTF-8 bytes, not UTF-16 units
  });

  it('puts a uid in the bucket whose hash range holds it', () => {
    expect(bucketOf('3f2504e0-4f89-11d3-9a0c-0305e82c3301', 64)).toBe(0xa6 >> 2); // top 6 bits of 0xa6fb…
    expect(bucketOf('a', 2)).toBe(1);
    expect(bucketOf('a', 1)).toBe(0);
    for (const uid of uids.slice(0, 200)) expect(bucketOf(uid, 4096) >> 6).toBe(bucketOf(uid, 64)); // finer buckets nest in coarser ones
    expect(() => bucketOf('a', 48)).toThrow('power of two');
    expect([0, 3, 8192, 1.5].map(validBucketCount)).toEqual([false, false, false, false]);
  });

  it('spreads uids evenly over buckets', () => {
    const counts = new Array(16).fill(0);
    for (const uid of uids) counts[bucketOf(uid, 16)]++;
    for (const c of counts) expect(Math.abs(c - uids.length / 16)).toBeLessThan(uids.length / 16 * 0.25);
  });

  it('writes one shardRange per run of adjacent buckets, closing the space at 2^64', () => {
    expect(shardSelectorOf([], 8)).toBeUndefined();
    expect(shardSelectorOf([0, 1, 5], 8)).toBe("shardRange(object.metadata.uid, '0x0000000000000000', '0x4000000000000000') || shardRange(object.metadata.uid, '0xa000000000000000', '0xc000000000000000')");
    expect(shardSelectorOf([7, 6, 6], 8)).toBe("shardRange(object.metadata.uid, '0xc000000000000000', '0x10000000000000000')");
    expect(shardSelectorOf([0], 1)).toBe("shardRange(object.metadata.uid, '0x0000000000000000', '0x10000000000000000')");
  });

  it('selects a uid by range exactly when its bucket is in the set', () => {
    const owned = [1, 2, 3, 9, 15];
    const ranges = [...shardSelectorOf(owned, 16)!.matchAll(/'0x([0-9a-f]+)', '0x([0-9a-f]+)'/g)].map((m) => [BigInt(`0x${m[1]}`), BigInt(`0x${m[2]}`)]);
    for (const uid of uids) {
      const h = fnv1a64(uid);
      expect(ranges.some(([start, end]) => h >= start && h < end)).toBe(owned.includes(bucketOf(uid, 16)));
    }
  });

  it('gives every bucket to exactly one member, and moves only a leaver\'s buckets', () => {
    const members = ['a', 'b', 'c'];
    const shares = members.map((m) => bucketsOwnedBy(m, members, 64));
    expect(shares.flat().sort((x, y) => x - y)).toEqual(Array.from({ length: 64 }, (_, i) => i));
    for (const share of shares) expect(share.length).toBeGreaterThan(10);
    const after = ['a', 'c'].map((m) => bucketsOwnedBy(m, ['a', 'c'], 64));
    expect(after[0]).toEqual(expect.arrayContaining(shares[0]));
    expect(after[1]).toEqual(expect.arrayContaining(shares[2]));
  });

  it('selects children by the bucket label', () => {
    expect(bucketLabelSelector('dkv.example.com/shard-bucket', [9, 2, 2])).toBe('dkv.example.com/shard-bucket in (2,9)');
    expect(bucketLabelSelector('x', [])).toBeUndefined();
  });
});
