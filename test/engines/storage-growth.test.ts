import { decideStorageStep, type StorageInput } from '../../engines/storage-growth.js';

const EXPANDABLE = { name: 'fast', allowVolumeExpansion: true };
const claim = (i: number, requested: string, capacity?: string) => ({ name: `data-kv-${i}`, requested, capacity: capacity ?? requested });
const step = (over: Partial<StorageInput>) =>
  decideStorageStep({ desired: '20Gi', live: '10Gi', storageClass: EXPANDABLE, storageClassName: 'fast', claims: [claim(0, '10Gi'), claim(1, '10Gi'), claim(2, '10Gi')], podsNotAdopted: [], ...over });

describe('storage growth, one claim at a time', () => {
  it('does nothing when the size is unchanged, in any spelling', () => {
    expect(step({ desired: '10Gi' })).toEqual({ kind: 'unchanged' });
    expect(step({ desired: '10240Mi' })).toEqual({ kind: 'unchanged' });
  });

  it('refuses to shrink, naming the field and the size the volumes have', () => {
    expect(step({ desired: '5Gi' })).toEqual({ kind: 'refused', message: expect.stringMatching(/^spec\.storage\.size: 5Gi is smaller than the members' volumes \(10Gi\)/) });
  });

  it('is blocked, naming the StorageClass, when it does not allow expansion or does not exist', () => {
    expect(step({ storageClass: { name: 'standard', allowVolumeExpansion: false } })).toEqual({ kind: 'blocked', message: expect.stringMatching(/StorageClass standard to allow volume expansion/) });
    expect(step({ storageClass: undefined, storageClassName: 'gone' })).toEqual({ kind: 'blocked', message: expect.stringMatching(/StorageClass gone, which does not exist/) });
  });

  it('grows the first claim, waits for its new capacity, then grows the next', () => {
    expect(step({})).toMatchObject({ kind: 'resizeClaim', claim: 'data-kv-0' });
    expect(step({ claims: [claim(0, '20Gi', '10Gi'), claim(1, '10Gi'), claim(2, '10Gi')] })).toMatchObject({ kind: 'waiting', message: expect.stringMatching(/data-kv-0 to report 20Gi/) });
    expect(step({ claims: [claim(0, '20Gi'), claim(1, '10Gi'), claim(2, '10Gi')] })).toMatchObject({ kind: 'resizeClaim', claim: 'data-kv-1' });
  });

  it('replaces the StatefulSet once every claim holds the new size', () => {
    expect(step({ claims: [claim(0, '20Gi'), claim(1, '20Gi'), claim(2, '20Gi')] })).toMatchObject({ kind: 'replaceStatefulSet' });
  });

  it('does not replace the StatefulSet while a member pod is not yet adopted by it (the garbage collector would delete that pod)', () => {
    const grown = [claim(0, '20Gi'), claim(1, '20Gi'), claim(2, '20Gi')];
    expect(step({ claims: grown, podsNotAdopted: ['kv-1', 'kv-2'] })).toEqual({ kind: 'waiting', message: expect.stringMatching(/waiting for the StatefulSet to adopt kv-1, kv-2 before replacing it$/) });
  });
});
