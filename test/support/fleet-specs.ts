/**
 * A fleet of varied DistributedKV specs, the same for every test and
 * benchmark that needs many: spec number i covers every size with and
 * without backup (9 and 2 are coprime), varied images, storage, resources and
 * schedules, so a large fleet exercises every branch of the generator.
 * For the generic engine every backup names a runner of its own: the default
 * one, `dkv backup`, speaks etcd only, and validation refuses a generic
 * cluster with backups without one (the etcd fleet is unchanged).
 */
const SCHEDULES = ['0 2 * * *', '@hourly', '*/15 * * * *', '30 3 * * 0', '0 */6 * * 1-5', '@daily'];

export function fleetSpec(i: number, name: string, namespace: string, engine: 'etcd' | 'generic' = 'etcd'): Record<string, unknown> {
  const spec: Record<string, unknown> = { size: 1 + (i % 9), image: `registry.example.com/kv/server:1.${i % 5}.${i % 3}` };
  if (i % 3 === 0) spec.storage = { size: `${10 + (i % 50)}Gi`, storageClassName: i % 2 ? 'fast-ssd' : 'standard' };
  if (i % 4 === 0) spec.resources = { requests: { cpu: `${100 * (1 + (i % 9))}m`, memory: `${1 + (i % 4)}Gi` }, limits: { cpu: 2, memory: '4Gi' } };
  if (i % 2 === 0) {
    spec.backup = { s3Path: `s3://acme-kv-backups/${namespace}/${name}`, schedule: SCHEDULES[i % SCHEDULES.length] };
    if (i % 10 === 0 || engine === 'generic') (spec.backup as Record<string, string>).backupImage = 'registry.example.com/dkv/backup:1.1.0';
  }
  return spec;
}
