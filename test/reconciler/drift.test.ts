/**
 * Drift is a live object no longer holding a value the controller set;
 * fields it never set, and values the API server merely rewrote, are not.
 */
import { findDrift } from '../../reconciler/core/drift.js';
import type { KubeObject } from '../../model/kube-object.js';

const desired: KubeObject = {
  apiVersion: 'apps/v1',
  kind: 'StatefulSet',
  metadata: { name: 'kv', namespace: 'ns', labels: { app: 'kv' }, ownerReferences: [{ uid: 'x' }] },
  spec: {
    replicas: 3,
    template: { spec: { containers: [{ name: 'kv', image: 'kv:1', resources: { limits: { cpu: 2, memory: '1024Mi' } }, ports: [{ containerPort: 2379, name: 'client' }] }] } },
  },
};

function live(patch: (o: any) => void = () => undefined): any {
  const o = structuredClone(desired) as any;
  delete o.metadata.ownerReferences; // objects applied by GitOps carry none
  o.metadata.labels.extra = 'theirs';
  o.metadata.managedFields = [];
  o.spec.minReadySeconds = 10; // someone else's field
  o.spec.template.spec.containers[0].terminationMessagePath = '/dev/termination-log'; // a server default
  o.spec.template.spec.containers.push({ name: 'sidecar', image: 'mesh:1' }); // someone else's list item
  patch(o);
  return o;
}

describe('drift', () => {
  it('is nothing when every field we set holds its value, whatever others added', () => {
    expect(findDrift(desired, live(), 'dkv-controller')).toEqual([]);
  });

  it('is nothing when the API server rewrote a quantity into canonical form', () => {
    expect(findDrift(desired, live((o) => (o.spec.template.spec.containers[0].resources.limits = { cpu: '2', memory: '1Gi' })), 'dkv-controller')).toEqual([]);
  });

  it('names the field a scale changed and the manager that changed it', () => {
    const scaled = live((o) => {
      o.spec.replicas = 7;
      o.metadata.managedFields = [{ manager: 'kubectl', operation: 'Update', subresource: 'scale', fieldsV1: { 'f:spec': { 'f:replicas': {} } } }];
    });
    expect(findDrift(desired, scaled, 'dkv-controller')).toEqual([{ path: 'spec.replicas', manager: 'kubectl (scale)' }]);
  });

  it('finds a named list item by name, wherever it moved', () => {
    const edited = live((o) => {
      o.spec.template.spec.containers.reverse();
      o.spec.template.spec.containers[1].image = 'kv:2';
      o.metadata.managedFields = [
        { manager: 'payments-team', operation: 'Update', time: '2026-11-22T10:00:00Z', fieldsV1: { 'f:spec': { 'f:minReadySeconds': {} } } },
        { manager: 'kubectl-edit', operation: 'Update', time: '2026-11-22T09:00:00Z', fieldsV1: { 'f:spec': { 'f:template': { 'f:spec': { 'f:containers': { 'k:{"name":"kv"}': { 'f:image': {} } } } } } } },
      ];
    });
    // The later payments-team edit owns a sibling field, not this one.
    expect(findDrift(desired, edited, 'dkv-controller')).toEqual([{ path: 'spec.template.spec.containers[kv].image', manager: 'kubectl-edit' }]);
  });

  it('reports a removed label and a removed list item', () => {
    const stripped = live((o) => {
      delete o.metadata.labels.app;
      o.spec.template.spec.containers = o.spec.template.spec.containers.filter((c: { name: string }) => c.name !== 'kv');
    });
    expect(findDrift(desired, stripped, 'dkv-controller').map((d) => d.path)).toEqual(['metadata.labels.app', 'spec.template.spec.containers[kv]']);
  });
});
