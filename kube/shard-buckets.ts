/**
 * Buckets: the unit of work that sharded replicas hand over. A cluster's
 * bucket is fixed by its uid (the top bits of the uid's 64-bit FNV-1a hash,
 * the hash kube-apiserver's `shardSelector` uses, KEP-5866), so:
 *
 * - a replica's share, a set of buckets, is a set of hash ranges the API
 *   server can filter on (`shardRange(object.metadata.uid, …) || …`);
 * - the objects a cluster owns carry its bucket in one label that never
 *   changes (their own uids hash elsewhere), so a replica watches its
 *   clusters' children with `bucket in (…)`, and a re-shard moves buckets
 *   between watches instead of relabelling objects;
 * - buckets, not uids, are assigned to replicas by rendezvous hashing
 *   with bounded loads (bucketOwners below).
 */
import { weight } from './shard-ring.js';

const FNV_OFFSET = 0xcbf29ce484222325n;
const FNV_PRIME = 0x100000001b3n;
const MASK = (1n << 64n) - 1n;

/** 64-bit FNV-1a of the UTF-8 bytes (Go's hash/fnv New64a, as apimachinery's sharding.HashField). */
export function fnv1a64(value: string): bigint {
  let hash = FNV_OFFSET;
  for (const byte of Buffer.from(value, 'utf8')) {
    hash ^= BigInt(byte);
    hash = (hash * FNV_PRIME) & MASK;
  }
  return hash;
}

/** Whether `n` is a power of two from 1 to 4096 (buckets split the hash space evenly). */
export function validBucketCount(n: number): boolean {
  return Number.isInteger(n) && n >= 1 && n <= 4096 && (n & (n - 1)) === 0;
}

function assertBucketCount(buckets: number): void {
  if (!validBucketCount(buckets)) throw new Error(`shard buckets must be a power of two from 1 to 4096 (got ${buckets})`);
}

/** The bucket (0 … buckets-1) of a uid: the top log2(buckets) bits of its hash. */
export function bucketOf(uid: string, buckets: number): number {
  assertBucketCount(buckets);
  return Number((fnv1a64(uid) * BigInt(buckets)) >> 64n);
}

/** The key a bucket is assigned by (rendezvous hashing over replica identities). */
export function bucketKey(bucket: number): string {
  return `bucket-${bucket}`;
}

/** The bucket a bucketKey() names (NaN for any other key). */
export function bucketOfKey(key: string): number {
  return /^bucket-(0|[1-9][0-9]*)$/.test(key) ? Number(key.slice('bucket-'.length)) : Number.NaN;
}

const assignments = new Map<string, readonly string[]>();

/**
 * The owner of every bucket among `members`: rendezvous hashing with bounded
 * loads (Argo CD's sharding, after Mirrokni et al.). Plain rendezvous hashing
 * gave the benchmark's busiest of three replicas 96 of 256 buckets (37.5%,
 * a binomial spread); here no member owns more than ceil(buckets / members). Every (bucket,
 * member) pair is taken in order of its rendezvous weight, highest first, and
 * the bucket goes to the member unless the bucket is taken or the member is
 * full: a bucket stays with its rendezvous owner unless that owner is full.
 *
 * The price: a membership change may move a few buckets between replicas
 * that stay (ones that had overflowed go back to their preferred replica
 * when the bound rises, or move off one when it falls), besides the
 * leaver's or joiner's own. The hand-over barrier (shard-membership.ts)
 * guards any bucket that moves, so this costs a hand-over, never safety.
 * Deterministic: every replica computes the same owners from the same set.
 */
export function bucketOwners(members: readonly string[], buckets: number): readonly string[] {
  const sorted = [...new Set(members)].sort();
  const memo = `${buckets}\n${sorted.join('\n')}`;
  const known = assignments.get(memo);
  if (known) return known;
  assertBucketCount(buckets);
  const owners: string[] = new Array<string>(buckets);
  if (sorted.length > 0) {
    const bound = Math.ceil(buckets / sorted.length);
    const pairs: { bucket: number; member: string; weight: bigint }[] = [];
    for (let bucket = 0; bucket < buckets; bucket++) for (const member of sorted) pairs.push({ bucket, member, weight: weight(member, bucketKey(bucket)) });
    // Ties (never seen with 64-bit weights) fall to the smaller bucket, then the smaller name: still the same everywhere.
    pairs.sort((a, b) => (a.weight === b.weight ? a.bucket - b.bucket || (a.member < b.member ? -1 : 1) : a.weight > b.weight ? -1 : 1));
    const load = new Map(sorted.map((m) => [m, 0]));
    for (const { bucket, member } of pairs) {
      if (owners[bucket] !== undefined || load.get(member)! >= bound) continue;
      owners[bucket] = member;
      load.set(member, load.get(member)! + 1);
    }
  }
  // A replica computes this once per view; a handful of views are ever live at once.
  if (assignments.size >= 16) assignments.delete(assignments.keys().next().value!);
  assignments.set(memo, owners);
  return owners;
}

/** The owner of the bucket a bucketKey() names among `members` (undefined for none, or for a key that names no bucket). */
export function bucketKeyOwner(key: string, members: readonly string[], buckets: number): string | undefined {
  const bucket = bucketOfKey(key);
  return Number.isInteger(bucket) && bucket < buckets ? bucketOwners(members, buckets)[bucket] : undefined;
}

/** The buckets `identity` owns among `members`. */
export function bucketsOwnedBy(identity: string, members: readonly string[], buckets: number): number[] {
  const owned: number[] = [];
  bucketOwners(members, buckets).forEach((owner, bucket) => {
    if (owner === identity) owned.push(bucket);
  });
  return owned;
}

const hex = (n: bigint): string => `0x${n.toString(16).padStart(16, '0')}`;

/**
 * The `shardSelector` of a set of buckets: one shardRange per run of
 * adjacent buckets (the end bound is exclusive; 2^64 closes the space).
 * Undefined for no buckets: the API server refuses an empty selector.
 */
export function shardSelectorOf(owned: readonly number[], buckets: number): string | undefined {
  const sorted = [...new Set(owned)].sort((a, b) => a - b);
  if (sorted.length === 0) return undefined;
  const width = (1n << 64n) / BigInt(buckets);
  const ranges: string[] = [];
  let start = sorted[0];
  for (let i = 1; i <= sorted.length; i++) {
    if (i < sorted.length && sorted[i] === sorted[i - 1] + 1) continue;
    const end = sorted[i - 1] + 1;
    ranges.push(`shardRange(object.metadata.uid, '${hex(BigInt(start) * width)}', '${end === buckets ? '0x10000000000000000' : hex(BigInt(end) * width)}')`);
    if (i < sorted.length) start = sorted[i];
  }
  return ranges.join(' || ');
}

/** The label selector term for children of clusters in these buckets (`label in (…)`); undefined for none. */
export function bucketLabelSelector(label: string, owned: readonly number[]): string | undefined {
  if (owned.length === 0) return undefined;
  return `${label} in (${[...new Set(owned)].sort((a, b) => a - b).join(',')})`;
}
