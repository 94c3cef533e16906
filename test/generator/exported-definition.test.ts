/**
 * What `dkv export` keeps of a live DistributedKV: what its author wrote,
 * nothing the API server set, and the status only as a comment. Its file
 * reads back, as `dkv synth` reads it, as the object alone.
 */
import { parseAllDocuments } from 'yaml';
import { API_VERSION, KIND } from '../../api/validate.js';
import { exportedDefinition, exportFileName, exportText, LAST_APPLIED_ANNOTATION, type LiveDistributedKV } from '../../api/exported-definition.js';
import { differingPaths } from '../../cli/import-command.js';
import { readSpecText } from '../../cli/read-specs.js';
import { CLI_TIMEOUT_MS, DEFAULT_CONFIG, dkv, readTree, removeTemporaryDirectories, temporaryDirectory } from './support.js';

afterAll(removeTemporaryDirectories);

const SPEC = { size: 3, image: 'registry.k8s.io/etcd:3.6.8-0', backup: { s3Path: 's3://bucket/shop/orders', schedule: '0 2 * * *' } };

/** As the API server returns it, with every field it sets. */
const LIVE: LiveDistributedKV = {
  metadata: {
    name: 'orders',
    namespace: 'shop',
    uid: '0b6c6c1e-7a37-4f0e-9d1c-2f9a1f4b6f10',
    resourceVersion: '4711',
    generation: 3,
    creationTimestamp: '2026-11-23T10:00:00Z',
    deletionTimestamp: '2026-11-23T11:00:00Z',
    finalizers: ['dkv.example.com/final-backup'],
    ownerReferences: [{ apiVersion: 'v1', kind: 'ConfigMap', name: 'owner', uid: 'x' }],
    managedFields: [{ manager: 'kubectl', operation: 'Apply', fieldsV1: { 'f:spec': {} } }],
    labels: { team: 'payments' },
    annotations: { 'example.com/owner': 'payments@example.com', [LAST_APPLIED_ANNOTATION]: '{"spec":{"size":1}}' },
  },
  spec: SPEC,
  status: { readyReplicas: 3, observedGeneration: 3, conditions: [{ type: 'Available', status: 'True', reason: 'QuorumHealthy', message: 'all 3 members healthy' }] },
};
const ORIGIN = { server: 'https://10.0.0.1:6443', exportedAt: new Date('2026-11-23T12:00:00Z') };

describe('an exported DistributedKV', () => {
  it('keeps apiVersion, kind, name, namespace, labels, annotations and spec, and nothing the API server set', () => {
    expect(exportedDefinition(LIVE)).toEqual({
      apiVersion: API_VERSION,
      kind: KIND,
      metadata: { name: 'orders', namespace: 'shop', labels: { team: 'payments' }, annotations: { 'example.com/owner': 'payments@example.com' } },
      spec: SPEC,
    });
  });

  it('drops kubectl\'s last-applied copy, and labels or annotations left empty', () => {
    const onlyLastApplied = { ...LIVE, metadata: { ...LIVE.metadata, labels: {}, annotations: { [LAST_APPLIED_ANNOTATION]: '{}' } } };
    expect(exportedDefinition(onlyLastApplied).metadata).toEqual({ name: 'orders', namespace: 'shop' });
  });

  it('is a copy: changing the export never changes the live object', () => {
    const exported = exportedDefinition(LIVE);
    (exported.spec as { size: number }).size = 5;
    exported.metadata.labels!.team = 'other';
    expect(LIVE.spec!.size).toBe(3);
    expect(LIVE.metadata.labels!.team).toBe('payments');
  });

  it('is named <namespace>.<name>.yaml', () => {
    expect(exportFileName(LIVE)).toBe('shop.orders.yaml');
  });

  it('starts with where and when it was exported, then the status as a comment', () => {
    const lines = exportText(LIVE, ORIGIN).split('\n');
    expect(lines[0]).toBe('# Exported by dkv export from https://10.0.0.1:6443 at 2026-11-23T12:00:00.000Z; apply with dkv import or kubectl apply -f.');
    expect(lines[1]).toMatch(/^# status at export/);
    const status = lines.slice(2, lines.findIndex((l) => !l.startsWith('#')));
    expect(status).toContain('#   readyReplicas: 3');
    expect(status).toContain('#     - message: "all 3 members healthy"');
    expect(status).toContain('#       type: Available');
  });

  it('says so when there is no status', () => {
    expect(exportText({ ...LIVE, status: undefined }, ORIGIN).split('\n')[1]).toBe('# status at export: none (no controller had reported on it)');
  });

  it('reads back as the cleaned object alone, in sorted keys, and is a valid spec for dkv synth', () => {
    const text = exportText(LIVE, ORIGIN);
    const docs = parseAllDocuments(text);
    expect(Array.isArray(docs) && docs.length).toBe(1);
    expect((docs as { toJS(): unknown }[])[0].toJS()).toEqual(exportedDefinition(LIVE));
    const body = text.split('\n').filter((l) => !l.startsWith('#'));
    expect(body.filter((l) => /^\S/.test(l))).toEqual(['apiVersion: example.com/v1beta1', 'kind: DistributedKV', 'metadata:', 'spec:']);
    const read = readSpecText('shop.orders.yaml', text, DEFAULT_CONFIG);
    expect(read.problems).toEqual([]);
    expect(read.specs.map((s) => s.resource.metadata.name)).toEqual(['orders']);
  });
});

describe('how dkv import names a difference', () => {
  it('names each differing leaf, and a subtree present on one side only once', () => {
    expect(differingPaths(SPEC, SPEC, 'spec')).toEqual([]);
    expect(differingPaths({ ...SPEC, size: 5 }, SPEC, 'spec')).toEqual(['spec.size']);
    const { backup: _backup, ...withoutBackup } = SPEC;
    expect(differingPaths(withoutBackup, SPEC, 'spec')).toEqual(['spec.backup']);
    expect(differingPaths(SPEC, { ...SPEC, backup: { ...SPEC.backup, schedule: '@daily' } }, 'spec')).toEqual(['spec.backup.schedule']);
  });
});

describe('dkv export --help and dkv import --help', () => {
  it.each(['export', 'import'])('dkv %s --help prints its usage and exits 0, contacting no cluster and writing nothing', (command) => {
    const dir = temporaryDirectory('dkv-help-');
    const result = dkv([command, '--help'], dir, { KUBECONFIG: `${dir}/missing-kubeconfig` });
    expect(result.stderr).toBe('');
    expect(result.status).toBe(0);
    expect(result.stdout).toMatch(new RegExp(`^usage: dkv ${command}\\b`));
    for (const flag of command === 'export' ? ['--out', '--namespace', '--kubeconfig'] : ['--from', '--kubeconfig', '--overwrite']) expect(result.stdout).toContain(flag);
    expect(readTree(dir)).toEqual({});
  }, CLI_TIMEOUT_MS);

  it('are listed in dkv\'s own usage', () => {
    const { stdout } = dkv(['--help']);
    expect(stdout).toContain('dkv export --out <dir>');
    expect(stdout).toContain('dkv import --from <dir>');
  }, CLI_TIMEOUT_MS);
});
