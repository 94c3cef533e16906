/**
 * spec.restore in the generator: what each member runs before it starts,
 * spelled the same way as the member itself, and the inputs refused.
 */
import { customResourceDefinition } from '../../api/crd.js';
import { validateDistributedKV } from '../../api/validate.js';
import { byRole, DEFAULT_CONFIG, kvDocument, synth } from './support.js';

const FROM = 's3://acme-kv-backups/nightly/shop/orders/20261123T093000.123Z/';
const ETCD = 'registry.k8s.io/etcd:3.6.8-0';
const flag = (args: readonly string[], name: string) => args.find((a) => a.startsWith(`--${name}=`))?.slice(name.length + 3);

describe('a cluster created from a backup', () => {
  it('restores in an init container of the runner image, with the member\'s own name, data directory, token and peer URL, and the S3 settings and credentials of a backup', () => {
    const { statefulSet, cronJob } = byRole(synth({ image: ETCD, restore: { from: FROM }, backup: { s3Path: 's3://acme-kv-backups/nightly', schedule: '0 2 * * *' } }));
    const pod = (statefulSet as any).spec.template.spec;
    const [member] = pod.containers;
    // The restore first; then every member's recover container (a restored member is never a recovery's recorded one).
    expect(pod.initContainers.map((c: any) => c.name)).toEqual(['restore', 'recover']);
    const [restore] = pod.initContainers;
    expect(restore.image).toBe(DEFAULT_CONFIG.backup.runner.image);
    expect(restore.command).toEqual(['dkv', 'restore']);
    expect(flag(restore.args, 'from')).toBe(FROM);
    for (const name of ['name', 'data-dir', 'initial-cluster-token', 'initial-advertise-peer-urls']) expect([name, flag(restore.args, name)]).toEqual([name, flag(member.args, name)]);
    // Whether to restore, and the initial cluster, are the member ConfigMap's, as etcd reads them.
    expect(flag(restore.args, 'initial-cluster')).toBe('$(ETCD_INITIAL_CLUSTER)');
    expect(flag(restore.args, 'initial-cluster-state')).toBe('$(ETCD_INITIAL_CLUSTER_STATE)');
    expect(restore.envFrom).toEqual([{ secretRef: { name: DEFAULT_CONFIG.backup.runner.credentialsSecret, optional: true } }]);
    for (const key of ['ETCD_INITIAL_CLUSTER', 'ETCD_INITIAL_CLUSTER_STATE']) expect(restore.env).toContainEqual(member.env.find((e: any) => e.name === key));
    // The data volume only: the restore dials no member, so no certificate Secret is mounted where it is not needed.
    expect(restore.volumeMounts).toEqual(member.volumeMounts.filter((m: { name: string }) => m.name === 'data'));
    expect(restore.securityContext).toEqual(member.securityContext);
    // The same S3 settings as the backup runner's (whose DKV_S3_PATH is where backups go, not where this one comes from).
    const backupEnv = (cronJob as any).spec.jobTemplate.spec.template.spec.containers[0].env.filter((e: any) => e.name.startsWith('DKV_S3_') && e.name !== 'DKV_S3_PATH');
    expect(restore.env.filter((e: any) => e.name.startsWith('DKV_S3_'))).toEqual(backupEnv);
  });

  it('adds no restore to a cluster without restore (only the recover container every member has)', () => {
    const { statefulSet } = byRole(synth({ image: ETCD }));
    expect((statefulSet as any).spec.template.spec.initContainers.map((c: any) => c.name)).toEqual(['recover']);
  });

  it('refuses a source that is not one backup\'s folder, and a restore the engine cannot do, naming the field', () => {
    const problems = (spec: Record<string, unknown>, config = DEFAULT_CONFIG) => {
      const result = validateDistributedKV(kvDocument({ image: ETCD, ...spec }), config);
      return result.valid ? [] : result.problems.map((p) => `${p.segments.join('.')}: ${p.message}`);
    };
    expect(problems({ restore: { from: 's3://acme-kv-backups/nightly/shop/orders/' } })).toEqual([
      expect.stringMatching(/^spec\.restore\.from: must be one backup's folder, s3:\/\/bucket\/prefix\/<YYYYMMDDThhmmss\.mmmZ>\//),
    ]);
    expect(problems({ restore: {} })).toEqual([expect.stringMatching(/^spec\.restore\.from: required/)]);
    expect(problems({ restore: { from: FROM } }, { ...DEFAULT_CONFIG, engine: 'generic' })).toEqual([
      'spec.restore: the generic engine cannot restore a backup: dkv restore restores etcd members only',
    ]);
    expect(problems({ restore: { from: FROM } })).toEqual([]);
  });

  it('is fixed at creation: the CRD refuses adding, changing or removing it', () => {
    const crd = customResourceDefinition(DEFAULT_CONFIG) as any;
    const spec = crd.spec.versions[0].schema.openAPIV3Schema.properties.spec;
    expect(spec['x-kubernetes-validations']).toEqual([expect.objectContaining({
      rule: 'has(self.restore) == has(oldSelf.restore) && (!has(self.restore) || self.restore.from == oldSelf.restore.from)',
    })]);
  });
});

describe('CSI volume snapshots', () => {
  const withSnapshots = { ...DEFAULT_CONFIG, backup: { ...DEFAULT_CONFIG.backup, volumeSnapshots: { ...DEFAULT_CONFIG.backup.volumeSnapshots, className: 'fast-snapshots' } } };
  const BACKUP = { s3Path: 's3://acme-kv-backups/nightly', schedule: '0 2 * * *' };

  it('gives the backup runner the configured ServiceAccount and snapshot class only when volume snapshots are on', () => {
    const pod = (config = DEFAULT_CONFIG) => (byRole(synth({ image: ETCD, backup: BACKUP }, config)).cronJob as any).spec.jobTemplate.spec.template.spec;
    const off = pod();
    expect(off.automountServiceAccountToken).toBe(false);
    expect(off.serviceAccountName).toBeUndefined();
    expect(off.containers[0].env.map((e: any) => e.name)).not.toContain('DKV_VOLUME_SNAPSHOT_CLASS');
    const on = pod(withSnapshots);
    expect(on).toMatchObject({ serviceAccountName: 'dkv-backup-runner', automountServiceAccountToken: true });
    expect(on.containers[0].env).toEqual(expect.arrayContaining([
      { name: 'DKV_VOLUME_SNAPSHOT_CLASS', value: 'fast-snapshots' },
      { name: 'DKV_VOLUME_SNAPSHOT_READY_TIMEOUT_SECONDS', value: String(DEFAULT_CONFIG.backup.volumeSnapshots.readyTimeoutSeconds) },
    ]));
  });

  it('creates every member\'s volume from a VolumeSnapshot a restore names, and from nothing for a backup in S3', () => {
    const template = (from: string) => (byRole(synth({ image: ETCD, restore: { from } })).statefulSet as any).spec.volumeClaimTemplates[0].spec;
    expect(template('kv-1-20261123t093000123z').dataSource).toEqual({ apiGroup: 'snapshot.storage.k8s.io', kind: 'VolumeSnapshot', name: 'kv-1-20261123t093000123z' });
    expect(template(FROM).dataSource).toBeUndefined();
    const restore = (byRole(synth({ image: ETCD, restore: { from: 'kv-1-20261123t093000123z' } })).statefulSet as any).spec.template.spec.initContainers[0];
    expect(flag(restore.args, 'from')).toBe('kv-1-20261123t093000123z');
  });
});
