/**
 * Whose object is it (ownership.ts)? Only this cluster's controlling owner
 * reference, or, with no controller at all, this cluster's exact desired
 * hash (objects applied from its own `dkv synth` output), make it ours.
 */
import { ownershipOf } from '../../reconciler/core/ownership.js';

const HASH = 'dkv.example.com/desired-hash';
const UID = 'uid-of-this-cluster';
const service = (metadata: Record<string, unknown>) => ({ apiVersion: 'v1', kind: 'Service', metadata: { name: 'orders', namespace: 'shop', ...metadata } });

describe('ownership of a live object that has a generated name', () => {
  it('is ours with our controlling owner reference, whatever its hash', () => {
    const live = service({ ownerReferences: [{ apiVersion: 'example.com/v1alpha1', kind: 'DistributedKV', name: 'orders', uid: UID, controller: true }], annotations: { [HASH]: 'old' } });
    expect(ownershipOf(live, UID, 'new', HASH)).toEqual({ ours: true });
  });

  it('is another cluster\'s with its controlling owner reference, even with our hash', () => {
    const live = service({ ownerReferences: [{ apiVersion: 'example.com/v1alpha1', kind: 'DistributedKV', name: 'orders-peers', uid: 'other', controller: true }], annotations: { [HASH]: 'h' } });
    expect(ownershipOf(live, UID, 'h', HASH)).toEqual({ ours: false, owner: 'DistributedKV/orders-peers (uid other)' });
  });

  it('is ours without a controller only with exactly our desired hash (applied from dkv synth output)', () => {
    expect(ownershipOf(service({ annotations: { [HASH]: 'h' } }), UID, 'h', HASH)).toEqual({ ours: true });
    expect(ownershipOf(service({ annotations: { [HASH]: 'g' } }), UID, 'h', HASH)).toMatchObject({ ours: false });
  });

  it('names who wrote an application\'s object that has no controller', () => {
    const live = service({ managedFields: [{ manager: 'kubectl', operation: 'Apply' }, { manager: 'helm', operation: 'Update' }] });
    expect(ownershipOf(live, UID, 'h', HASH)).toEqual({ ours: false, owner: 'no controlling owner, written by kubectl, helm' });
    // A non-controlling owner reference (a Helm release, say) does not make it anyone's.
    expect(ownershipOf(service({ ownerReferences: [{ kind: 'ConfigMap', name: 'x', uid: UID }] }), UID, 'h', HASH)).toMatchObject({ ours: false });
  });

  it('in detect-only mode takes any uncontrolled object as the one to compare (a GitOps tool applies them)', () => {
    expect(ownershipOf(service({ annotations: { [HASH]: 'g' } }), UID, 'h', HASH, true)).toEqual({ ours: true });
    const controlled = service({ ownerReferences: [{ kind: 'Deployment', name: 'web', uid: 'w', controller: true }] });
    expect(ownershipOf(controlled, UID, 'h', HASH, true)).toMatchObject({ ours: false });
  });
});
