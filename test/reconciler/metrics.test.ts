/**
 * dkv_drift_total's `manager` label takes whatever name a writer chose, so
 * its cardinality is bounded: past the limit, new names count as `other`.
 */
import { ControllerMetrics } from '../../reconciler/process/metrics.js';

describe('the drift metric', () => {
  it('keeps the first N field managers as label values and counts the rest as other', async () => {
    const metrics = new ControllerMetrics(3);
    for (let i = 0; i < 50; i++) metrics.recordDrift('StatefulSet', 'spec.replicas', `attacker-${i}`, 'corrected');
    metrics.recordDrift('StatefulSet', 'spec.replicas', 'attacker-1', 'corrected');
    const values = (await metrics.drift.get()).values;
    const managers = new Set(values.map((v) => v.labels.manager));
    expect(managers).toEqual(new Set(['attacker-0', 'attacker-1', 'attacker-2', 'other']));
    expect(values.find((v) => v.labels.manager === 'other')!.value).toBe(47);
    expect(values.find((v) => v.labels.manager === 'attacker-1')!.value).toBe(2);
  });
});
