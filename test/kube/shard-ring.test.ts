/**
 * Rendezvous hashing's two properties the sharded controller will rely on
 * (issue 11): every replica computes the same owner from the same members,
 * and a membership change moves only the keys it must.
 */
import { createHash } from 'node:crypto';
import { ownerOf, shardView } from '../../kube/shard-ring.js';

/** 10,000 uid-shaped keys, the same on every run: the spread figures below are exact, not a chance. */
const KEYS = Array.from({ length: 10_000 }, (_, i) => {
  const hex = createHash('sha256').update(String(i)).digest('hex');
  return `${hex.slice(0, 8)}-${hex.slice(8, 12)}-${hex.slice(12, 16)}-${hex.slice(16, 20)}-${hex.slice(20, 32)}`;
});
const owners = (members: readonly string[]) => new Map(KEYS.map((k) => [k, ownerOf(k, members)]));

describe('rendezvous hashing of cluster uids over replicas', () => {
  it('gives every key one owner, the same whatever order the members are listed in, and none without members', () => {
    const a = owners(['r-0', 'r-1', 'r-2']);
    const b = owners(['r-2', 'r-0', 'r-1']);
    expect(b).toEqual(a);
    expect(ownerOf(KEYS[0], [])).toBeUndefined();
  });

  it('spreads 10,000 keys over 3 replicas within 5% of an even share', () => {
    const counts = new Map<string, number>();
    for (const owner of owners(['r-0', 'r-1', 'r-2']).values()) counts.set(owner!, (counts.get(owner!) ?? 0) + 1);
    for (const count of counts.values()) expect(Math.abs(count - KEYS.length / 3)).toBeLessThan(0.05 * KEYS.length / 3);
  });

  it('moves only the leaving replica\'s keys when one leaves, and only keys to the newcomer when one joins', () => {
    const three = owners(['r-0', 'r-1', 'r-2']);
    const two = owners(['r-0', 'r-1']);
    for (const key of KEYS) if (three.get(key) !== 'r-2') expect(two.get(key)).toBe(three.get(key));
    const four = owners(['r-0', 'r-1', 'r-2', 'r-3']);
    let moved = 0;
    for (const key of KEYS) {
      if (four.get(key) === three.get(key)) continue;
      expect(four.get(key)).toBe('r-3');
      moved++;
    }
    expect(Math.abs(moved - KEYS.length / 4)).toBeLessThan(0.05 * KEYS.length / 4);
  });

  it('names a view by its members alone', () => {
    expect(shardView(['r-1', 'r-0', 'r-1'])).toEqual(shardView(['r-0', 'r-1']));
    expect(shardView(['r-0', 'r-1']).members).toEqual(['r-0', 'r-1']);
    expect(shardView(['r-0']).id).not.toBe(shardView(['r-0', 'r-1']).id);
  });
});
