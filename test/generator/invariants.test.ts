/**
 * Rules every cluster obeys, checked for every size the API allows, with and
 * without backups.
 */
import { desiredHash } from '../../model/desired-hash.js';
import { BACKUP, byRole, changedObjects, DEFAULT_CONFIG, hashes, type Manifest, selects, SIZES, synth } from './support.js';

const HASH = DEFAULT_CONFIG.hashAnnotation;
const majority = (size: number): number => Math.floor(size / 2) + 1;

describe.each(SIZES)('a cluster of %i member(s)', (size) => {
  const withoutBackup = synth({ name: 'orders', size });
  const withBackup = synth({ name: 'orders', size, backup: BACKUP });
  const variants: [string, Manifest[]][] = [
    ['without backup', withoutBackup],
    ['with backup', withBackup],
  ];

  it('runs one pod per member, bootstrapping a new etcd cluster of exactly those members', () => {
    for (const [, objects] of variants) {
      const { statefulSet, memberConfig } = byRole(objects);
      expect(statefulSet.spec.replicas).toBe(size);
      expect(memberConfig!.data).toEqual({
        ETCD_INITIAL_CLUSTER: Array.from({ length: size }, (_, i) => `orders-${i}=https://orders-${i}.orders-peers:2380`).join(','),
        ETCD_INITIAL_CLUSTER_STATE: 'new',
      });
      // Each key by name, never the whole ConfigMap: whoever can write it must not add etcd settings (ETCD_ENABLE_PPROF, ...).
      const member = statefulSet.spec.template.spec.containers[0];
      expect(member.envFrom).toBeUndefined();
      const keyRef = (key: string) => ({ name: key, valueFrom: { configMapKeyRef: { name: memberConfig!.metadata.name, key } } });
      expect(member.env.filter((e: any) => e.valueFrom?.configMapKeyRef)).toEqual(Object.keys(memberConfig!.data).map(keyRef));
      for (const init of statefulSet.spec.template.spec.initContainers) {
        expect((init.envFrom ?? []).filter((f: any) => f.configMapRef?.name === memberConfig!.metadata.name)).toEqual([]);
      }
    }
  });

  it('deletes a removed member\'s volume when it scales in (a re-grown ordinal joins fresh) and keeps volumes when the cluster is deleted', () => {
    for (const [, objects] of variants) expect(byRole(objects).statefulSet.spec.persistentVolumeClaimRetentionPolicy).toEqual({ whenScaled: 'Delete', whenDeleted: 'Retain' });
  });

  it('puts the tail of the member\'s log in its termination message when it fails: etcd says only there that it lost its data, and the controller replaces such a member at once', () => {
    for (const [, objects] of variants) expect(byRole(objects).statefulSet.spec.template.spec.containers[0].terminationMessagePolicy).toBe('FallbackToLogsOnError');
  });

  it('restarts no member for a new template by itself: the controller restarts them one at a time (OnDelete)', () => {
    for (const [, objects] of variants) expect(byRole(objects).statefulSet.spec.updateStrategy).toEqual({ type: 'OnDelete' });
  });

  it('selects its members with a subset of the labels their pod template carries', () => {
    for (const [, objects] of variants) {
      const { statefulSet } = byRole(objects);
      const selector = statefulSet.spec.selector.matchLabels;
      expect(Object.keys(selector).length).toBeGreaterThan(0);
      expect(statefulSet.spec.template.metadata.labels).toMatchObject(selector);
    }
  });

  it('points both Services and the PodDisruptionBudget at exactly the StatefulSet members', () => {
    for (const [, objects] of variants) {
      const { statefulSet, headless, client, pdb } = byRole(objects);
      const selector = statefulSet.spec.selector.matchLabels;
      expect(headless.spec.selector).toEqual(selector);
      expect(client.spec.selector).toEqual(selector);
      expect(pdb.spec.selector).toEqual({ matchLabels: selector });
    }
  });

  it('never counts backup pods as members', () => {
    const { statefulSet, cronJob } = byRole(withBackup);
    const backupPodLabels = cronJob!.spec.jobTemplate.spec.template.metadata.labels;
    expect(backupPodLabels).toBeDefined();
    expect(selects(statefulSet.spec.selector.matchLabels, backupPodLabels)).toBe(false);
  });

  it('gives every member a stable DNS name through a headless Service that publishes unready peers', () => {
    for (const [, objects] of variants) {
      const { statefulSet, headless } = byRole(objects);
      expect(headless.spec.clusterIP).toBe('None');
      expect(headless.spec.publishNotReadyAddresses).toBe(true);
      expect(statefulSet.spec.serviceName).toBe(headless.metadata.name);
    }
  });

  it('lets node drains evict one member at a time, whatever the size, never none', () => {
    for (const [, objects] of variants) expect(byRole(objects).pdb.spec.maxUnavailable).toBe(1);
  });

  if (size >= 3) {
    it('keeps a majority available when nodes drain', () => {
      for (const [, objects] of variants) {
        const { maxUnavailable } = byRole(objects).pdb.spec;
        expect(size - maxUnavailable).toBeGreaterThanOrEqual(majority(size));
      }
    });
  }

  it('runs a backup CronJob only when backups are configured', () => {
    expect(byRole(withoutBackup).cronJob).toBeUndefined();
    expect(withoutBackup.map((o) => o.kind).sort()).toEqual(['ConfigMap', 'NetworkPolicy', 'PodDisruptionBudget', 'Service', 'Service', 'StatefulSet']);
    expect(byRole(withBackup).cronJob).toBeDefined();
  });

  it('never runs two backups at once and keeps a bounded Job history', () => {
    const { spec } = byRole(withBackup).cronJob!;
    expect(spec.schedule).toBe(BACKUP.schedule);
    expect(spec.concurrencyPolicy).toBe('Forbid');
    for (const limit of [spec.successfulJobsHistoryLimit, spec.failedJobsHistoryLimit]) {
      expect(Number.isInteger(limit)).toBe(true);
      expect(limit).toBeGreaterThan(0);
    }
  });

  it('tells the backup job where to upload and which client Service address to read from', () => {
    const { client, cronJob } = byRole(withBackup);
    const clientPort = client.spec.ports.find((p: { name: string }) => p.name === 'client').port;
    const env: { name: string; value?: string }[] = cronJob!.spec.jobTemplate.spec.template.spec.containers[0].env;
    const values = env.map((e) => e.value);
    expect(values).toContain(BACKUP.s3Path);
    expect(values).toContain(`${client.metadata.name}:${clientPort}`);
  });

  it('labels every object as part of this DistributedKV, the backup CronJob as its backup component', () => {
    for (const [, objects] of variants) {
      for (const object of objects) {
        expect(object.metadata.labels).toEqual(
          expect.objectContaining({
            'app.kubernetes.io/name': 'distributedkv',
            'app.kubernetes.io/instance': 'orders',
            'app.kubernetes.io/managed-by': 'dkv',
            'app.kubernetes.io/component': object.kind === 'CronJob' ? 'backup' : 'server',
          }),
        );
      }
    }
  });

  it('annotates every object with the hash of its own desired content', () => {
    for (const [, objects] of variants) {
      for (const object of objects) {
        const hash = object.metadata.annotations?.[HASH];
        expect(hash).toMatch(/^[0-9a-f]{64}$/);
        expect(hash).toBe(desiredHash(object, HASH));
      }
    }
  });
});

describe('what a change to the spec touches', () => {
  it('a new backup schedule changes only the CronJob', () => {
    for (const size of SIZES) {
      const before = hashes(synth({ size, backup: BACKUP }));
      const after = hashes(synth({ size, backup: { ...BACKUP, schedule: '30 3 * * 0' } }));
      expect(changedObjects(before, after)).toEqual(['CronJob/orders-backup']);
    }
  });

  it('a new image rolls the StatefulSet and leaves the Services, the PDB and the backup alone', () => {
    for (const size of SIZES) {
      for (const backup of [undefined, BACKUP]) {
        const before = hashes(synth({ size, backup }));
        const after = hashes(synth({ size, backup, image: 'registry.example.com/kv/server:1.5.0' }));
        expect(changedObjects(before, after)).toEqual(['StatefulSet/orders']);
      }
    }
  });

  it.each(SIZES.slice(0, -1))('resizing from %i members changes the member ConfigMap and the StatefulSet\'s replicas, never its pod template nor the PDB', (size) => {
    for (const backup of [undefined, BACKUP]) {
      const before = synth({ size, backup });
      const after = synth({ size: size + 1, backup });
      expect(changedObjects(hashes(before), hashes(after))).toEqual(['ConfigMap/orders-members', 'StatefulSet/orders']);
      // A membership change restarts no running member: the template the pods run is the same.
      expect(byRole(after).statefulSet.spec.template).toEqual(byRole(before).statefulSet.spec.template);
      expect(byRole(after).memberConfig!.data.ETCD_INITIAL_CLUSTER.split(',')).toHaveLength(size + 1);
    }
  });

  it('removing the backup deletes the CronJob and leaves every other object unchanged', () => {
    for (const size of SIZES) {
      const before = hashes(synth({ size, backup: BACKUP }));
      const after = hashes(synth({ size }));
      expect(changedObjects(before, after)).toEqual(['CronJob/orders-backup']);
      expect(after.has('CronJob/orders-backup')).toBe(false);
    }
  });

  it('moving the cluster to another namespace changes no hash', () => {
    const before = hashes(synth({ size: 3, backup: BACKUP, namespace: 'shop' }));
    const after = hashes(synth({ size: 3, backup: BACKUP, namespace: 'staging' }));
    expect(changedObjects(before, after)).toEqual([]);
  });
});
