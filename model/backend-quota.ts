/**
 * Each member's backend quota (etcd's --quota-backend-bytes): the size its
 * database file may reach before etcd raises NOSPACE and refuses writes.
 * The generator renders it and the controller reports fullness against it,
 * so both read it here.
 *
 * Unset in the spec, it is half the member's volume: the same volume holds
 * the write-ahead log (up to five 64 MiB files by default), the snapshots,
 * and, while a defragmentation runs, a second copy of the database's pages
 * in use; half leaves room for all three. It is capped at 8 GiB, the most
 * etcd recommends (larger databases make snapshots, restores and
 * defragmentation slow). etcd-druid pairs its 8 GiB default quota with a
 * 16 GiB volume, the same proportion.
 */
import type { DistributedKVSpec } from '../imports/distributedkv.js';
import { quantityValue } from './quantity.js';

/** etcd's recommended maximum for a backend's database. */
export const RECOMMENDED_MAX_QUOTA_BYTES = 8 * 2 ** 30;

/** The share of the volume a derived quota takes. */
export const QUOTA_SHARE_OF_VOLUME = 0.5;

/** The volume size the spec asks for, in bytes (storage.size is validated to be a binary quantity). */
export function volumeBytes(spec: Pick<DistributedKVSpec, 'storage'>, defaultSize = '10Gi'): number {
  return quantityValue(spec.storage?.size ?? defaultSize) ?? 0;
}

/** The quota the members run with: the spec's, or half the volume (whole MiB), at most 8 GiB. */
export function backendQuotaBytes(spec: Pick<DistributedKVSpec, 'storage' | 'maintenance'>): number {
  const explicit = spec.maintenance?.quota;
  if (explicit !== undefined) return quantityValue(explicit) ?? 0;
  const derived = Math.floor((volumeBytes(spec) * QUOTA_SHARE_OF_VOLUME) / 2 ** 20) * 2 ** 20;
  return Math.min(derived, RECOMMENDED_MAX_QUOTA_BYTES);
}
