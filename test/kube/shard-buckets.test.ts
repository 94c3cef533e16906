/**
 * Buckets must agree with kube-apiserver's shardSelector bit for bit: the
 * hash is checked against Go's hash/fnv (the values below were printed by
 * `fnv.New64a()` in Go 1.26), and the selectors against the ranges they
 * must cover. test/integration/sharding.test.ts checks the same against
 * the real API server with the ShardedListAndWatch gate on.
 */
import { bucketKey, bucketKeyOwner, bucketLabelSelector, bucketOf, bucketOwners, bucketsOwnedBy, fnv1a64, shardSelectorOf, validBucketCount } from '../../kube/shard-buckets.js';
import { ownerOf } from '../../kube/shard-ring.js';

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

  it('gives every bucket to exactly one member, none more than ceil(buckets / members), the same whatever the order', () => {
    for (const members of [['a', 'b', 'c'], ['r-0', 'r-1', 'r-2', 'r-3', 'r-4'], ['only']]) {
      for (const buckets of [1, 64, 256]) {
        const shares = members.map((m) => bucketsOwnedBy(m, members, buckets));
        expect(shares.flat().sort((x, y) => x - y)).toEqual(Array.from({ length: buckets }, (_, i) => i));
        for (const share of shares) expect(share.length).toBeLessThanOrEqual(Math.ceil(buckets / members.length));
        expect(bucketOwners([...members].reverse(), buckets)).toEqual(bucketOwners(members, buckets));
      }
    }
    expect(bucketOwners([], 8).filter((o) => o !== undefined)).toEqual([]);
  });

  it('keeps plain rendezvous hashing\'s owner for every bucket whose owner is not full', () => {
    const members = ['r-0', 'r-1', 'r-2'];
    const owners = bucketOwners(members, 256);
    const load = new Map(members.map((m) => [m, owners.filter((o) => o === m).length]));
    let kept = 0;
    owners.forEach((owner, b) => {
      const preferred = ownerOf(bucketKey(b), members)!;
      if (owner === preferred) kept++;
      else expect(load.get(preferred)).toBe(Math.ceil(256 / 3)); // moved only off a full member
    });
    expect(kept).toBeGreaterThan(0.9 * 256);
  });

  it('moves a leaver\'s buckets and only a few others when one of three leaves (its own move to the two that stay)', () => {
    const three = bucketOwners(['a', 'b', 'c'], 256);
    const two = bucketOwners(['a', 'c'], 256);
    let others = 0;
    three.forEach((owner, b) => {
      if (owner === 'b') expect(['a', 'c']).toContain(two[b]);
      else if (two[b] !== owner) others++;
    });
    expect(others).toBeLessThan(0.1 * 256);
  });

  it('names the owner of a bucket key, and of nothing else', () => {
    const owners = bucketOwners(['a', 'b'], 16);
    expect(bucketKeyOwner(bucketKey(5), ['b', 'a'], 16)).toBe(owners[5]);
    expect(bucketKeyOwner('bucket-16', ['a', 'b'], 16)).toBeUndefined();
    expect(bucketKeyOwner('bucket-05', ['a', 'b'], 16)).toBeUndefined();
    expect(bucketKeyOwner('uid-1', ['a', 'b'], 16)).toBeUndefined();
  });

  it('selects children by the bucket label', () => {
    expect(bucketLabelSelector('dkv.example.com/shard-bucket', [9, 2, 2])).toBe('dkv.example.com/shard-bucket in (2,9)');
    expect(bucketLabelSelector('x', [])).toBeUndefined();
  });
});
