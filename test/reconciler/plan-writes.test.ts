/**
 * planWrites, the pure core of a reconcile: from desired and live objects
 * alone, what to write and why, what is someone else's, which fields are
 * held, and what to prune.
 */
import { loadDefaultConfig } from '../../api/config.js';
import { validateDistributedKV } from '../../api/validate.js';
import { synthesizeCluster } from '../../constructs/synthesize.js';
import type { KubeObject } from '../../model/kube-object.js';
import { ClusterMemory } from '../../reconciler/memory/cluster-memory.js';
import type { CachedObject } from '../../kube/informer.js';
import { planWrites, type WritePlanInput } from '../../reconciler/core/plan-writes.js';

const config = loadDefaultConfig();
const HASH = config.hashAnnotation;
const MANAGER = config.controller.fieldManager;
const UID = 'uid-kv';

function desiredFor(spec: Record<string, unknown>): KubeObject[] {
  const result = validateDistributedKV({ apiVersion: 'example.com/v1beta1', kind: 'DistributedKV', metadata: { name: 'kv', namespace: 'shop' }, spec }, config);
  if (!result.valid) throw new Error('invalid test spec');
  return synthesizeCluster(result.resource, config);
}

/** The live object a successful apply leaves: the desired one, controlled by this cluster. */
function liveCopy(object: KubeObject, edit: (o: any) => void = () => undefined): CachedObject {
  const copy = JSON.parse(JSON.stringify(object));
  copy.metadata.uid = `uid-${object.kind}-${object.metadata.name}`;
  copy.metadata.ownerReferences = [{ apiVersion: 'example.com/v1beta1', kind: 'DistributedKV', name: 'kv', uid: UID, controller: true }];
  edit(copy);
  return copy;
}

const name = (o: { kind?: string; metadata: { name: string } }) => `${o.kind}/${o.metadata.name}`;

function input(desired: KubeObject[], live: Map<string, CachedObject | undefined>, overrides: Partial<WritePlanInput> = {}): WritePlanInput {
  const memory = new ClusterMemory();
  return {
    desired, live, owned: [...live.values()].filter((o): o is CachedObject => o?.metadata.ownerReferences?.[0]?.uid === UID),
    clusterUid: UID, hashAnnotation: HASH, fieldManager: MANAGER, detectOnly: false, previouslyGenerated: new Set(), now: 0,
    memoryOf: (object) => memory.object('shop/kv', object),
    ...overrides,
  };
}

const SPEC = { size: 3, image: 'kv:1', backup: { s3Path: 's3://b/kv', schedule: '@daily' } };

describe('planWrites', () => {
  it('creates every object of a new cluster, and writes nothing over a converged one', () => {
    const desired = desiredFor(SPEC);
    const none = planWrites(input(desired, new Map(desired.map((o) => [name(o), undefined]))));
    expect(none.writes.map((w) => [name(w.desired), w.reason])).toEqual(desired.map((o) => [name(o), 'created']));
    // Nobody looked whether the names are free: the API server is asked to create each only if absent.
    expect(none.writes.every((w) => w.ifAbsent)).toBe(true);

    const converged = planWrites(input(desired, new Map(desired.map((o) => [name(o), liveCopy(o)]))));
    expect(converged).toEqual({ writes: [], conflicts: [], held: [], prunable: [] });
  });

  it('calls a missing object that status listed deleted (drift), not created', () => {
    const desired = desiredFor(SPEC);
    const live = new Map(desired.map((o) => [name(o), o.kind === 'Service' ? undefined : liveCopy(o)]));
    const plan = planWrites(input(desired, live, { previouslyGenerated: new Set(['Service/kv-peers']) }));
    expect(plan.writes.map((w) => [name(w.desired), w.reason, w.ifAbsent])).toEqual([['Service/kv-peers', 'drift', true], ['Service/kv', 'created', true]]);
  });

  it('updates an object whose hash differs, and corrects a drifted field naming who changed it', () => {
    const desired = desiredFor(SPEC);
    const live = new Map(desired.map((o) => [name(o), liveCopy(o, (c) => {
      if (c.kind === 'CronJob') c.metadata.annotations[HASH] = 'an older spec';
      if (c.kind === 'StatefulSet') {
        c.spec.replicas = 7;
        c.metadata.managedFields = [{ manager: 'kubectl', operation: 'Update', subresource: 'scale', fieldsV1: { 'f:spec': { 'f:replicas': {} } } }];
      }
    })]));
    const plan = planWrites(input(desired, live));
    expect(plan.writes.map((w) => [name(w.desired), w.reason, w.drift, w.ifAbsent])).toEqual([
      ['StatefulSet/kv', 'drift', [{ path: 'spec.replicas', manager: 'kubectl (scale)' }], false],
      ['CronJob/kv-backup', 'spec-changed', [], false],
    ]);
  });

  it('never plans a write to an object of the same name that is not this cluster\'s, and says whose it is', () => {
    const desired = desiredFor(SPEC);
    const live = new Map(desired.map((o) => [name(o), liveCopy(o)]));
    live.set('Service/kv', { apiVersion: 'v1', kind: 'Service', metadata: { name: 'kv', namespace: 'shop', managedFields: [{ manager: 'helm' }] }, spec: { selector: { app: 'web' } } });
    const plan = planWrites(input(desired, live));
    expect(plan.writes).toEqual([]);
    expect(plan.conflicts).toEqual([{ object: 'Service/kv', message: expect.stringContaining('not this cluster\'s (no controlling owner, written by helm)') }]);
  });

  it('holds a field another writer keeps changing, and still corrects the object\'s other drift', () => {
    const desired = desiredFor(SPEC);
    const memory = new ClusterMemory({ threshold: 1, windowMs: 1000, holdMs: 60_000, maxHoldMs: 60_000 });
    memory.object('shop/kv', 'StatefulSet/kv').fights.corrected('spec.replicas', 0);
    const statefulSet = desired.find((o) => o.kind === 'StatefulSet')!;
    const scaled = liveCopy(statefulSet, (c) => (c.spec.replicas = 5));
    const base = input(desired, new Map(desired.map((o) => [name(o), o.kind === 'StatefulSet' ? scaled : liveCopy(o)])), { memoryOf: (o) => memory.object('shop/kv', o), now: 10 });
    const onlyHeld = planWrites(base);
    expect(onlyHeld.writes).toEqual([]);
    expect(onlyHeld.held).toEqual([{ object: 'StatefulSet/kv', path: 'spec.replicas', manager: undefined, until: 60_000 }]);

    const alsoImage = liveCopy(statefulSet, (c) => {
      c.spec.replicas = 5;
      c.spec.template.spec.containers[0].image = 'kv:evil';
    });
    const both = planWrites({ ...base, live: new Map([...base.live, ['StatefulSet/kv', alsoImage]]) });
    expect(both.writes.map((w) => w.drift.map((f) => f.path))).toEqual([['spec.replicas', 'spec.template.spec.containers[kv].image']]);
  });

  it('treats our hash replaced by another writer\'s as drift once this process has applied it', () => {
    const desired = desiredFor(SPEC);
    const memory = new ClusterMemory();
    const pdb = desired.find((o) => o.kind === 'PodDisruptionBudget')!;
    memory.object('shop/kv', 'PodDisruptionBudget/kv').appliedHash = pdb.metadata.annotations![HASH];
    const live = new Map(desired.map((o) => [name(o), liveCopy(o, (c) => {
      if (c.kind === 'PodDisruptionBudget') c.metadata.annotations[HASH] = 'argocd applied this';
    })]));
    const plan = planWrites(input(desired, live, { memoryOf: (o) => memory.object('shop/kv', o) }));
    expect(plan.writes.map((w) => [name(w.desired), w.reason, w.drift.map((f) => f.path)])).toEqual([['PodDisruptionBudget/kv', 'drift', [`metadata.annotations.${HASH}`]]]);
  });

  it('prunes what this cluster controls and the spec no longer asks for (backup removed)', () => {
    const withBackup = desiredFor(SPEC);
    const without = desiredFor({ size: 3, image: 'kv:1' });
    const live = new Map(withBackup.map((o) => [name(o), liveCopy(o)]));
    const plan = planWrites({ ...input(without, new Map([...live].filter(([k]) => k !== 'CronJob/kv-backup'))), owned: [...live.values()] as CachedObject[] });
    expect(plan.prunable.map(name)).toEqual(['CronJob/kv-backup']);
  });
});
