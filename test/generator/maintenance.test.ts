/**
 * What the generator gives every member so that a cluster stays alive with
 * no human step (docs/maintenance.md): etcd's auto-compaction and a backend
 * quota sized from the volume, in the member's arguments; requests and
 * limits on every container it generates (none runs best-effort); a
 * PriorityClass where the configuration names one. And the maintenance
 * settings etcd would not run as meant are refused by `dkv validate`,
 * naming the file, the field and the line, with nothing written.
 */
import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { stringify } from 'yaml';
import { loadConfig, type GeneratorConfig } from '../../api/config.js';
import { InputError } from '../../api/problem.js';
import { validateDistributedKV } from '../../api/validate.js';
import { checkConfig } from '../../constructs/config-check.js';
import { synthesizeCluster } from '../../constructs/synthesize.js';
import { BACKUP, byRole, CLI_TIMEOUT_MS, DEFAULT_CONFIG, dkv, kvDocument, readTree, removeTemporaryDirectories, SIZES, synth, temporaryDirectory, validResource, type ClusterOptions, type Manifest } from './support.js';

afterAll(removeTemporaryDirectories);

const ETCD = 'registry.k8s.io/etcd:3.6.8-0';
const GiB = 2 ** 30;
const RESTORE_FROM = 's3://acme-kv-backups/shop/orders/20261126T020000.000Z/';
const memberArgs = (options: ClusterOptions, config?: GeneratorConfig): string[] => byRole(synth({ image: ETCD, ...options }, config)).statefulSet.spec.template.spec.containers[0].args;
const flag = (args: readonly string[], name: string): string | undefined => args.find((a) => a.startsWith(`--${name}=`))?.slice(name.length + 3);

describe('compaction and quota in every member\'s arguments', () => {
  it('compacts periodically keeping 1h of history, and takes half the default 10Gi volume as its quota, by default', () => {
    const args = memberArgs({});
    expect(flag(args, 'auto-compaction-mode')).toBe('periodic');
    expect(flag(args, 'auto-compaction-retention')).toBe('1h');
    expect(flag(args, 'quota-backend-bytes')).toBe(String(5 * GiB));
  });

  it('keeps the last 10000 revisions in mode revision unless told how many, and runs the spec\'s retention as written', () => {
    expect(flag(memberArgs({ maintenance: { compaction: { mode: 'revision' } } }), 'auto-compaction-retention')).toBe('10000');
    const args = memberArgs({ maintenance: { compaction: { mode: 'revision', retention: '2500' } } });
    expect([flag(args, 'auto-compaction-mode'), flag(args, 'auto-compaction-retention')]).toEqual(['revision', '2500']);
    expect(flag(memberArgs({ maintenance: { compaction: { retention: '30m' } } }), 'auto-compaction-retention')).toBe('30m');
  });

  it.each([
    ['1Gi', 512 * 2 ** 20],
    ['10Gi', 5 * GiB],
    ['16Gi', 8 * GiB],
    ['50Gi', 8 * GiB],
    ['1Ti', 8 * GiB],
  ])('derives the quota of a %s volume: half of it, at most 8Gi', (size, quota) => {
    expect(flag(memberArgs({ storage: { size } }), 'quota-backend-bytes')).toBe(String(quota));
  });

  it('runs the spec\'s quota when it names one', () => {
    expect(flag(memberArgs({ storage: { size: '20Gi' }, maintenance: { quota: '12Gi' } }), 'quota-backend-bytes')).toBe(String(12 * GiB));
  });

  it('changes the pod template (so the controller rolls the members) when the retention or the quota changes, and only the StatefulSet', () => {
    const before = synth({ image: ETCD });
    const after = synth({ image: ETCD, maintenance: { compaction: { retention: '2h' } } });
    const changed = after.filter((o, i) => JSON.stringify(o) !== JSON.stringify(before[i])).map((o) => o.kind);
    expect(changed).toEqual(['StatefulSet']);
  });

  it('while the volumes grow, keeps the quota of the volumes the members have (the controller\'s volumeSizeNow), with the new volume template', () => {
    const resource = validResource(kvDocument({ image: ETCD, storage: { size: '20Gi' } }));
    const { statefulSet } = byRole(synthesizeCluster(resource, DEFAULT_CONFIG, undefined, { volumeSizeNow: '10Gi' }) as Manifest[]);
    expect(flag(statefulSet.spec.template.spec.containers[0].args, 'quota-backend-bytes')).toBe(String(5 * GiB));
    expect(statefulSet.spec.volumeClaimTemplates[0].spec.resources.requests.storage).toBe('20Gi');
    // Once grown (or with no growth under way), the spec's size decides.
    const grown = byRole(synthesizeCluster(resource, DEFAULT_CONFIG, undefined, { volumeSizeNow: '20Gi' }) as Manifest[]).statefulSet;
    expect(flag(grown.spec.template.spec.containers[0].args, 'quota-backend-bytes')).toBe(String(8 * GiB));
  });
});

describe('etcd\'s periodic corruption check in every member\'s arguments', () => {
  const withCheck = (seconds: number): GeneratorConfig => ({ ...DEFAULT_CONFIG, healing: { ...DEFAULT_CONFIG.healing, corruptionCheckSeconds: seconds } });

  it('has the leader compare the members\' data every 4 hours by default, with the flag spelled as etcd 3.6 names it', () => {
    const args = memberArgs({});
    expect(flag(args, 'corrupt-check-time')).toBe('14400s');
    expect(args.some((a) => a.startsWith('--experimental-corrupt-check-time'))).toBe(false);
  });

  it('spells it --experimental-corrupt-check-time for etcd 3.5 (its only name there: an unknown flag stops etcd) and for a tag that names no version (accepted by 3.5 and 3.6 alike)', () => {
    for (const image of ['quay.io/coreos/etcd:v3.5.17', 'registry.k8s.io/etcd:3.5.21-0', 'registry.k8s.io/etcd:latest', 'registry.example.com/kv/etcd-build@sha256:0123', 'registry.example.com/kv/server:1.4.2']) {
      const args = memberArgs({ image });
      expect({ image, check: flag(args, 'experimental-corrupt-check-time'), stable: flag(args, 'corrupt-check-time') }).toEqual({ image, check: '14400s', stable: undefined });
    }
  });

  it('runs the configuration\'s interval, and no check at all when it is 0', () => {
    expect(flag(memberArgs({}, withCheck(3)), 'corrupt-check-time')).toBe('3s');
    expect(memberArgs({}, withCheck(0)).filter((a) => a.includes('corrupt-check'))).toEqual([]);
  });

  it('changes the image and the flag\'s spelling in one pod template on an upgrade from 3.5 to 3.6: each member restarts once, with both', () => {
    const before = byRole(synth({ image: 'registry.k8s.io/etcd:3.5.21-0' })).statefulSet.spec.template.spec.containers[0];
    const after = byRole(synth({ image: ETCD })).statefulSet.spec.template.spec.containers[0];
    const changedArgs = (a: string[], b: string[]) => a.filter((x) => !b.includes(x));
    expect([before.image, changedArgs(before.args, after.args)]).toEqual(['registry.k8s.io/etcd:3.5.21-0', ['--experimental-corrupt-check-time=14400s']]);
    expect([after.image, changedArgs(after.args, before.args)]).toEqual([ETCD, ['--corrupt-check-time=14400s']]);
  });
});

describe('no container runs best-effort', () => {
  const memberContainer = (options: ClusterOptions, config?: GeneratorConfig) => byRole(synth({ image: ETCD, ...options }, config)).statefulSet.spec.template.spec.containers[0];

  it('gives members of a spec without resources the configuration\'s requests and limits', () => {
    expect(memberContainer({}).resources).toEqual({ requests: { cpu: '500m', memory: '1Gi' }, limits: { cpu: '2', memory: '4Gi' } });
    // An empty resources section is no choice: the defaults.
    expect(memberContainer({ resources: {} }).resources).toEqual(memberContainer({}).resources);
  });

  it('runs a spec\'s resources as written, replacing the defaults whole (a request above a default limit would make a pod Kubernetes refuses)', () => {
    expect(memberContainer({ resources: { requests: { cpu: '4', memory: '16Gi' } } }).resources).toEqual({ requests: { cpu: '4', memory: '16Gi' } });
    expect(memberContainer({ resources: { requests: { cpu: 1, memory: '2Gi' }, limits: { memory: '8Gi' } } }).resources).toEqual({ requests: { cpu: 1, memory: '2Gi' }, limits: { memory: '8Gi' } });
  });

  it('gives the backup container and the restore init container the configuration\'s requests and limits', () => {
    const backup = byRole(synth({ image: ETCD, backup: BACKUP })).cronJob!.spec.jobTemplate.spec.template.spec.containers[0];
    expect(backup.resources).toEqual({ requests: { cpu: '100m', memory: '256Mi' }, limits: { cpu: '1', memory: '512Mi' } });
    const ownRunner = byRole(synth({ image: ETCD, backup: { ...BACKUP, backupImage: 'registry.example.com/kv/backup:1' } })).cronJob!.spec.jobTemplate.spec.template.spec.containers[0];
    expect(ownRunner.resources).toEqual(backup.resources);
    const restore = byRole(synth({ image: ETCD, restore: { from: RESTORE_FROM } })).statefulSet.spec.template.spec.initContainers[0];
    expect(restore.resources).toEqual({ requests: { cpu: '100m', memory: '256Mi' }, limits: { cpu: '1', memory: '1Gi' } });
  });

  it.each(SIZES)('gives every container of a %i-member cluster with backups and a restore (and the recover container) requests and limits of CPU and memory', (size) => {
    const objects = synth({ image: ETCD, size, backup: BACKUP, restore: { from: RESTORE_FROM } });
    const { statefulSet, cronJob } = byRole(objects);
    const containers = [...statefulSet.spec.template.spec.containers, ...statefulSet.spec.template.spec.initContainers, ...cronJob!.spec.jobTemplate.spec.template.spec.containers];
    expect(containers.map((c) => c.name)).toEqual(['kv', 'restore', 'recover', 'backup']);
    for (const c of containers) {
      expect(Object.keys(c.resources.requests).sort()).toEqual(['cpu', 'memory']);
      expect(Object.keys(c.resources.limits).sort()).toEqual(['cpu', 'memory']);
    }
  });

  it('takes the defaults and a PriorityClass from a configuration file; no PriorityClass unless one is named', () => {
    expect(byRole(synth({ image: ETCD })).statefulSet.spec.template.spec.priorityClassName).toBeUndefined();
    const dir = temporaryDirectory('dkv-maintenance-config-');
    const file = join(dir, 'dkv.config.yaml');
    writeFileSync(file, stringify({
      members: { priorityClassName: 'kv-critical', resources: { requests: { cpu: '1', memory: '2Gi' }, limits: { memory: '2Gi' } } },
      restore: { resources: { requests: { memory: '512Mi' }, limits: { memory: '2Gi' } } },
      backup: { runner: { resources: { requests: { cpu: '50m' }, limits: { cpu: '500m' } } } },
    }));
    const config = checkConfig(loadConfig(file));
    const { statefulSet, cronJob } = byRole(synth({ image: ETCD, backup: BACKUP, restore: { from: RESTORE_FROM } }, config));
    expect(statefulSet.spec.template.spec.priorityClassName).toBe('kv-critical');
    expect(statefulSet.spec.template.spec.containers[0].resources).toEqual({ requests: { cpu: '1', memory: '2Gi' }, limits: { memory: '2Gi' } });
    expect(statefulSet.spec.template.spec.initContainers[0].resources).toEqual({ requests: { memory: '512Mi' }, limits: { memory: '2Gi' } });
    expect(cronJob!.spec.jobTemplate.spec.template.spec.containers[0].resources).toEqual({ requests: { cpu: '50m' }, limits: { cpu: '500m' } });
  });

  it('refuses a configuration whose default request exceeds its limit, naming the file and the field', () => {
    const dir = temporaryDirectory('dkv-maintenance-config-');
    const file = join(dir, 'dkv.config.yaml');
    writeFileSync(file, stringify({ members: { resources: { requests: { memory: '8Gi' }, limits: { memory: '4Gi' } } } }));
    let error: unknown;
    try {
      checkConfig(loadConfig(file));
    } catch (e) {
      error = e;
    }
    expect(error).toBeInstanceOf(InputError);
    expect((error as InputError).problems).toEqual([
      { file, path: 'members.resources.requests.memory', message: 'must be at most limits.memory (4Gi): Kubernetes refuses a pod whose request exceeds its limit (got 8Gi)' },
    ]);
  });
});

describe('maintenance settings etcd would not run as meant are refused', () => {
  const problems = (options: ClusterOptions) => {
    const result = validateDistributedKV(kvDocument({ image: ETCD, ...options }), DEFAULT_CONFIG);
    return result.valid ? [] : result.problems.map((p) => `${p.segments.join('.')}: ${p.message}`);
  };

  it('a retention in mode revision that is a duration (etcd would read "1h" as 3.6 trillion revisions and never compact)', () => {
    expect(problems({ maintenance: { compaction: { mode: 'revision', retention: '1h' } } })).toEqual([
      expect.stringMatching(/^spec\.maintenance\.compaction\.retention: mode revision keeps a number of revisions, such as "10000" \(got "1h", a duration: .*\); use mode periodic for a duration$/),
    ]);
    expect(problems({ maintenance: { compaction: { mode: 'periodic', retention: '1h' } } })).toEqual([]);
    expect(problems({ maintenance: { compaction: { mode: 'periodic', retention: '5' } } })).toEqual([]); // hours, as etcd reads it
  });

  it.each(['-5', '1d', '1.5', 'one hour', ''])('a retention that is neither a number nor a duration (%j), by the schema\'s pattern', (retention) => {
    expect(problems({ maintenance: { compaction: { retention } } })).toEqual([
      expect.stringMatching(/^spec\.maintenance\.compaction\.retention: must be a duration such as "1h" or "30m" \(mode periodic\) or a number of revisions such as "10000" \(mode revision\)/),
    ]);
  });

  it('a quota larger than the volume', () => {
    expect(problems({ storage: { size: '4Gi' }, maintenance: { quota: '6Gi' } })).toEqual([
      expect.stringMatching(/^spec\.maintenance\.quota: must be at most storage\.size \(4Gi\) less 320Mi for etcd's write-ahead log and snapshots, 3776Mi \(got "6Gi"\)/),
    ]);
    expect(problems({ maintenance: { quota: '11Gi' } })).toEqual([expect.stringMatching(/must be at most storage\.size \(10Gi\)/)]);
    expect(problems({ storage: { size: '4Gi' }, maintenance: { quota: '3Gi' } })).toEqual([]);
  });

  it('a quota that leaves the write-ahead log no room, or is 0, which etcd reads as its 2Gi default (issue 40)', () => {
    // Before: accepted, and the database could fill the whole volume.
    expect(problems({ storage: { size: '4Gi' }, maintenance: { quota: '4Gi' } })).toEqual([expect.stringMatching(/^spec\.maintenance\.quota: must be at most storage\.size \(4Gi\) less 320Mi/)]);
    expect(problems({ storage: { size: '1Gi' }, maintenance: { quota: '800Mi' } })).toEqual([expect.stringMatching(/less 256Mi .* 768Mi \(got "800Mi"\)/)]);
    expect(problems({ storage: { size: '1Gi' }, maintenance: { quota: '768Mi' } })).toEqual([]);
    expect(problems({ maintenance: { quota: '0Ki' } })).toEqual([expect.stringMatching(/^spec\.maintenance\.quota: must be more than 0 \(got "0Ki"\): etcd reads a quota of 0 as its own default, 2Gi/)]);
  });

  it('a defragmentation window whose schedule does not parse, or runs a range backwards', () => {
    const window = (schedule: string) => ({ maintenance: { defragmentation: { window: { schedule, durationMinutes: 60 } } } });
    expect(problems(window('0 5-3 * * *'))).toEqual(['spec.maintenance.defragmentation.window.schedule: hour range 5-3 runs backwards (got "0 5-3 * * *")']);
    expect(problems(window('at dawn'))).toEqual([expect.stringMatching(/^spec\.maintenance\.defragmentation\.window\.schedule: must be a 5-field cron expression/)]);
    expect(problems(window('61 * * * *'))).toHaveLength(1);
    expect(problems(window('0 3 * * mon-fri'))).toEqual([]);
  });

  it('a quota above 8Gi is run (etcd accepts it) with a warning from dkv validate; every problem above, by file, field and line, and nothing written', () => {
    const dir = temporaryDirectory('dkv-maintenance-specs-');
    writeFileSync(join(dir, 'big.yaml'), stringify(kvDocument({ name: 'big', image: ETCD, storage: { size: '40Gi' }, maintenance: { quota: '16Gi' } })));
    const warned = dkv(['validate', 'big.yaml'], dir);
    expect(warned.status).toBe(0);
    expect(warned.stderr).toMatch(/^warning: big\.yaml:\d+: big: spec\.maintenance\.quota: 16Gi is above 8Gi, the most etcd recommends: etcd runs it/m);

    writeFileSync(join(dir, 'orders.yaml'), stringify(kvDocument({
      image: ETCD, storage: { size: '4Gi' },
      maintenance: { compaction: { mode: 'revision', retention: '1h' }, quota: '6Gi', defragmentation: { window: { schedule: '0 5-3 * * *', durationMinutes: 60 } } },
    })));
    const before = readTree(dir);
    for (const command of [['validate', 'orders.yaml'], ['synth', '--specs', 'orders.yaml', '--out', 'out']]) {
      const refused = dkv(command, dir);
      expect(refused.status).toBe(1);
      expect(refused.stderr).not.toContain('    at ');
      expect(refused.stderr).toMatch(/^orders\.yaml: spec\.maintenance\.compaction\.retention: mode revision keeps a number of revisions.* \(line \d+\)$/m);
      expect(refused.stderr).toMatch(/^orders\.yaml: spec\.maintenance\.quota: must be at most storage\.size \(4Gi\).* \(line \d+\)$/m);
      expect(refused.stderr).toMatch(/^orders\.yaml: spec\.maintenance\.defragmentation\.window\.schedule: hour range 5-3 runs backwards .* \(line \d+\)$/m);
    }
    expect(readTree(dir)).toEqual(before);
  }, CLI_TIMEOUT_MS);
});
