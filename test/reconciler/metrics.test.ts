/**
 * dkv_drift_total's `manager` label takes whatever name a writer chose, so
 * its cardinality is bounded: past the limit, new names count as `other`.
 */
import { ControllerMetrics } from '../../reconciler/process/metrics.js';
import { recordBackupMetrics } from '../../reconciler/core/report.js';

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

describe('the metrics the alert rules read', () => {
  it('counts an engaged drift brake by kind, field and manager, the manager bounded as the drift metric', async () => {
    const metrics = new ControllerMetrics(1);
    metrics.recordFight('StatefulSet', 'spec.replicas', 'autoscaler');
    metrics.recordFight('StatefulSet', 'spec.replicas', 'another-writer');
    const values = (await metrics.fieldFights.get()).values;
    expect(values.map((v) => [v.labels.manager, v.value])).toEqual([['autoscaler', 1], ['other', 1]]);
  });

  it('exports the BackupFailing and BackupStale conditions as 1/0 gauges, and drops them with the backups', async () => {
    const metrics = new ControllerMetrics();
    const condition = (status: boolean) => ({ status, reason: 'r', message: 'm' });
    recordBackupMetrics({ metrics }, 'shop', 'orders', { failing: condition(true), stale: condition(false) });
    const value = async (gauge: typeof metrics.backupFailing) => (await gauge.get()).values.find((v) => v.labels.namespace === 'shop' && v.labels.name === 'orders')?.value;
    expect(await value(metrics.backupFailing)).toBe(1);
    expect(await value(metrics.backupStale)).toBe(0);
    recordBackupMetrics({ metrics }, 'shop', 'orders', undefined);
    expect(await value(metrics.backupFailing)).toBeUndefined();
    expect(await value(metrics.backupStale)).toBeUndefined();
  });
});
