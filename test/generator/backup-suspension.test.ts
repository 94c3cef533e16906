/**
 * Fleet mode's only mark on the generated objects: the backup CronJob's
 * `suspend`, said by the controller (true on a standby, false on the active
 * cluster) and left out of what `dkv synth` writes, whose output and hashes
 * stay as they were.
 */
import { loadDefaultConfig } from '../../api/config.js';
import { validateDistributedKV } from '../../api/validate.js';
import { synthesizeCluster } from '../../constructs/synthesize.js';

const config = loadDefaultConfig();
const result = validateDistributedKV({
  apiVersion: 'example.com/v1beta1', kind: 'DistributedKV', metadata: { name: 'orders', namespace: 'shop' },
  spec: { size: 3, image: 'registry.k8s.io/etcd:3.6.8-0', backup: { s3Path: 's3://b/p', schedule: '@daily' } },
}, config);
if (!result.valid) throw new Error('example spec invalid');

const cronJob = (backupsSuspended?: boolean): any => synthesizeCluster(result.resource, config, undefined, { backupsSuspended }).find((o) => o.kind === 'CronJob');

describe('the backup CronJob in fleet mode', () => {
  it('is suspended on a standby, explicitly not on the active cluster, and says nothing outside fleet mode', () => {
    expect(cronJob(true).spec.suspend).toBe(true);
    expect(cronJob(false).spec.suspend).toBe(false);
    expect(cronJob().spec).not.toHaveProperty('suspend');
  });

  it('hashes each differently, so a role change is applied, and leaves every other object as dkv synth writes it', () => {
    const hash = (o: any) => o.metadata.annotations[config.hashAnnotation];
    expect(new Set([hash(cronJob(true)), hash(cronJob(false)), hash(cronJob())]).size).toBe(3);
    const others = (backupsSuspended?: boolean) => synthesizeCluster(result.resource, config, undefined, { backupsSuspended }).filter((o) => o.kind !== 'CronJob');
    expect(others(true)).toEqual(others());
  });
});
