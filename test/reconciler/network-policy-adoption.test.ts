/**
 * Whether the controller applies a cluster's NetworkPolicy: nothing running
 * is harmed by upgrading the controller. A cluster whose members already
 * ran without one keeps running without one until its spec enables it; a
 * new cluster, and one that had it, gets it; the decision outlives the
 * process in status.networkPolicy.
 */
import { loadDefaultConfig, type GeneratorConfig } from '../../api/config.js';
import { synthesizeCluster } from '../../constructs/synthesize.js';
import { decideNetworkPolicy, WITHHELD_MESSAGE, type NetworkPolicyAdoptionInput } from '../../reconciler/day2/network-policy-adoption.js';
import { desiredStatus, type ObservedState } from '../../reconciler/core/status.js';
import { validateDistributedKV } from '../../api/validate.js';

const CONFIG = loadDefaultConfig();
const OFF_FOR_EVERY_CLUSTER: GeneratorConfig = { ...CONFIG, networkPolicy: { ...CONFIG.networkPolicy, enabled: false } };

function decide(overrides: Partial<NetworkPolicyAdoptionInput> = {}) {
  return decideNetworkPolicy({ spec: {}, config: CONFIG, statefulSetExists: false, policyApplied: false, ...overrides });
}

describe('whether a cluster\'s NetworkPolicy is applied', () => {
  it('a new cluster (no StatefulSet yet) gets it by default', () => {
    expect(decide()).toMatchObject({ state: 'Applied', apply: true, condition: { status: 'True', reason: 'Applied' } });
  });

  it('a cluster whose members already ran without one keeps running without one, and the condition says what to do', () => {
    const withheld = decide({ statefulSetExists: true });
    expect(withheld).toEqual({ state: 'Withheld', apply: false, condition: { status: 'False', reason: 'Withheld', message: WITHHELD_MESSAGE } });
    expect(withheld.condition.message).toContain('spec.networkPolicy.clients');
    expect(withheld.condition.message).toContain('spec.networkPolicy.enabled: true');
    // Recorded as Withheld, it stays so on the next reconcile and after a restart.
    expect(decide({ statefulSetExists: true, recorded: 'Withheld' }).state).toBe('Withheld');
  });

  it('spec.networkPolicy.enabled: true applies it to a cluster it was withheld from', () => {
    expect(decide({ statefulSetExists: true, recorded: 'Withheld', spec: { networkPolicy: { enabled: true } } })).toMatchObject({ state: 'Applied', apply: true });
  });

  it('one the controller applied is kept once the cluster runs: recorded, live, listed in status or applied by this process', () => {
    expect(decide({ statefulSetExists: true, recorded: 'Applied' })).toMatchObject({ state: 'Applied', apply: true });
    // A deleted policy (status lost, or written by the version before the record) is evidence enough when status lists it.
    expect(decide({ statefulSetExists: true, policyApplied: true })).toMatchObject({ state: 'Applied', apply: true });
    expect(decide({ statefulSetExists: true, recorded: 'Withheld', policyApplied: true })).toMatchObject({ state: 'Applied', apply: true });
  });

  it('the spec\'s false and the configuration\'s false turn it off, whatever was recorded; the configuration wins over a spec\'s true', () => {
    expect(decide({ spec: { networkPolicy: { enabled: false } }, recorded: 'Applied', policyApplied: true })).toMatchObject({ state: 'Off', apply: false, condition: { reason: 'Off' } });
    expect(decide({ config: OFF_FOR_EVERY_CLUSTER, spec: { networkPolicy: { enabled: true } } })).toMatchObject({ state: 'Off', apply: false });
  });

  it('turned off and on again by removing the spec\'s false: a running cluster without a policy is withheld, not given one unasked', () => {
    expect(decide({ statefulSetExists: true, recorded: 'Off' }).state).toBe('Withheld');
    // Before its StatefulSet existed it was a new cluster: it gets it.
    expect(decide({ recorded: 'Off' }).state).toBe('Applied');
  });
});

describe('what the controller synthesizes for a withheld cluster', () => {
  const resource = validateDistributedKV({ apiVersion: 'example.com/v1beta1', kind: 'DistributedKV', metadata: { name: 'orders', namespace: 'shop' }, spec: { size: 3, image: 'registry.k8s.io/etcd:3.6.8-0' } }, CONFIG);
  if (!resource.valid) throw new Error('the test cluster must be valid');

  it('no NetworkPolicy, and every other object exactly as `dkv synth` writes it (which keeps emitting the policy)', () => {
    const synth = synthesizeCluster(resource.resource, CONFIG);
    const withheld = synthesizeCluster(resource.resource, CONFIG, undefined, { networkPolicyWithheld: true });
    expect(synth.filter((o) => o.kind === 'NetworkPolicy')).toHaveLength(1);
    expect(withheld.filter((o) => o.kind === 'NetworkPolicy')).toHaveLength(0);
    expect(withheld).toEqual(synth.filter((o) => o.kind !== 'NetworkPolicy'));
  });
});

describe('the decision in status', () => {
  const observed = (networkPolicy?: ObservedState['networkPolicy']): ObservedState => ({ generation: 1, size: 3, generatedObjects: [], ...(networkPolicy ? { networkPolicy } : {}) });
  const withheld = decide({ statefulSetExists: true });

  it('status.networkPolicy and a NetworkPolicy condition say what was decided', () => {
    const status = desiredStatus(observed(withheld), undefined);
    expect(status.networkPolicy).toBe('Withheld');
    expect(status.conditions!.find((c) => c.type === 'NetworkPolicy')).toMatchObject({ status: 'False', reason: 'Withheld', message: WITHHELD_MESSAGE });
  });

  it('a refusal, which decides nothing, keeps the record and its condition (a status patch would otherwise drop them)', () => {
    const before = desiredStatus(observed(withheld), undefined);
    const refused = desiredStatus(observed(), before);
    expect(refused.networkPolicy).toBe('Withheld');
    expect(refused.conditions!.filter((c) => c.type === 'NetworkPolicy')).toEqual(before.conditions!.filter((c) => c.type === 'NetworkPolicy'));
  });
});
