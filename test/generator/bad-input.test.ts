/**
 * Every class of user mistake, as a user meets it: `dkv synth` exits 1,
 * names the file and the field (or the line and column of broken YAML),
 * shows no stack trace, and leaves the output directory exactly as it was.
 */
import { existsSync, mkdirSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { stringify } from 'yaml';
import { ALIAS_BOMB, BACKUP, CLI_TIMEOUT_MS, type ClusterOptions, dkv, kvDocument, readTree, removeTemporaryDirectories, temporaryDirectory } from './support.js';

afterAll(removeTemporaryDirectories);

const PRIOR_OUTPUT = {
  'shop.orders.k8s.yaml': '# written by an earlier run\n',
  'stale.k8s.yaml': '# a successful run would prune this\n',
  'README.md': 'not ours\n',
};

/** A directory holding the spec files, and an output directory with content from an earlier run. */
function workspace(files: Record<string, string>): { dir: string; out: string } {
  const dir = temporaryDirectory('dkv-bad-input-');
  for (const [name, text] of Object.entries(files)) writeFileSync(join(dir, name), text);
  const out = join(dir, 'out');
  mkdirSync(out);
  for (const [name, text] of Object.entries(PRIOR_OUTPUT)) writeFileSync(join(out, name), text);
  return { dir, out };
}

/** Runs `dkv synth` over the files and checks what every rejection must do; returns stderr. */
function expectRejected(files: Record<string, string>): string {
  const { dir, out } = workspace(files);
  const before = readTree(out);
  const specs = Object.keys(files).flatMap((name) => ['--specs', name]);
  const result = dkv(['synth', ...specs, '--out', 'out'], dir);
  expect(result.status).toBe(1);
  expect(result.stderr).not.toContain('    at ');
  expect(result.stderr).toMatch(/problem\(s\) found; nothing was written/);
  expect(readTree(out)).toEqual(before);
  return result.stderr;
}

const yamlOf = (options: ClusterOptions): string => stringify(kvDocument(options));

describe('dkv synth rejects', () => {
  it('a value of the wrong type', () => {
    const stderr = expectRejected({ 'orders.yaml': yamlOf({ size: 'three' as unknown as number }) });
    expect(stderr).toContain('orders.yaml: spec.size: must be integer (got "three")');
  }, CLI_TIMEOUT_MS);

  it('a value out of range', () => {
    const stderr = expectRejected({ 'orders.yaml': yamlOf({ size: 10 }) });
    expect(stderr).toContain('orders.yaml: spec.size: must be <= 9 (got 10)');
  }, CLI_TIMEOUT_MS);

  it('an unknown field, so a typo is never silently ignored', () => {
    const stderr = expectRejected({ 'orders.yaml': yamlOf({ replicas: 3 }) });
    expect(stderr).toContain('orders.yaml: spec.replicas: unknown field; did you mean spec.size?');
  }, CLI_TIMEOUT_MS);

  it('an unknown field that is a typo, naming the field meant', () => {
    const stderr = expectRejected({ 'orders.yaml': yamlOf({ replicaz: 3, backup: { ...BACKUP, schedul: '@daily' } as ClusterOptions['backup'] }) });
    expect(stderr).toMatch(/^orders\.yaml: spec\.replicaz: unknown field; did you mean spec\.size\? \(line \d+\)$/m);
    expect(stderr).toMatch(/^orders\.yaml: spec\.backup\.schedul: unknown field; did you mean spec\.backup\.schedule\? \(line \d+\)$/m);
  }, CLI_TIMEOUT_MS);

  it('a missing required field', () => {
    const document = kvDocument() as { spec: Record<string, unknown> };
    delete document.spec.image;
    const stderr = expectRejected({ 'orders.yaml': stringify(document) });
    expect(stderr).toContain('orders.yaml: spec.image: required field is missing');
  }, CLI_TIMEOUT_MS);

  it('an S3 path that is not s3://bucket/prefix', () => {
    const stderr = expectRejected({ 'orders.yaml': yamlOf({ backup: { ...BACKUP, s3Path: 'https://acme-kv-backups/shop' } }) });
    expect(stderr).toContain('orders.yaml: spec.backup.s3Path: must be an S3 path of the form s3://bucket/prefix');
    expect(stderr).toContain('"https://acme-kv-backups/shop"');
  }, CLI_TIMEOUT_MS);

  it.each([
    ['a minute out of range', '61 * * * *'],
    ['four fields instead of five', '0 2 * *'],
  ])('a cron schedule that does not parse: %s', (_what, schedule) => {
    const stderr = expectRejected({ 'orders.yaml': yamlOf({ backup: { ...BACKUP, schedule } }) });
    expect(stderr).toContain('orders.yaml: spec.backup.schedule:');
    expect(stderr).toContain(JSON.stringify(schedule));
  }, CLI_TIMEOUT_MS);

  it('a cron range that runs backwards', () => {
    const stderr = expectRejected({ 'orders.yaml': yamlOf({ backup: { ...BACKUP, schedule: '5-3 * * * *' } }) });
    expect(stderr).toContain('orders.yaml: spec.backup.schedule: minute range 5-3 runs backwards');
  }, CLI_TIMEOUT_MS);

  it.each([
    ['with upper-case letters', 'Orders'],
    ['starting with a digit', '9abc'],
  ])('a name that is not a DNS label: %s', (_what, name) => {
    const stderr = expectRejected({ 'orders.yaml': yamlOf({ name }) });
    expect(stderr).toContain(`orders.yaml: metadata.name: must be a DNS-1035 label`);
    expect(stderr).toContain(JSON.stringify(name));
  }, CLI_TIMEOUT_MS);

  it('specs that hold no DistributedKV at all, which would otherwise prune every manifest in the output', () => {
    const stderr = expectRejected({ 'empty.yaml': '# nothing here yet\n', 'namespace.yaml': 'apiVersion: v1\nkind: Namespace\nmetadata: {name: shop}\n' });
    expect(stderr).toContain('empty.yaml, namespace.yaml: no DistributedKV documents found');
  }, CLI_TIMEOUT_MS);

  it('a name too long for the objects derived from it', () => {
    const name = 'a'.repeat(53);
    const stderr = expectRejected({ 'orders.yaml': yamlOf({ name }) });
    expect(stderr).toContain('orders.yaml: metadata.name: too long: the StatefulSet name');
    expect(stderr).toMatch(/use a name of at most \d+ characters/);
  }, CLI_TIMEOUT_MS);

  it('broken YAML, at its line and column', () => {
    const text = ['apiVersion: example.com/v1alpha1', 'kind: DistributedKV', 'metadata:', '  name: orders', 'spec:', '  size: 3', '  image: registry.example.com/kv/server:1.4.2', '\tbackup: {}', ''].join('\n');
    const stderr = expectRejected({ 'orders.yaml': text });
    expect(stderr).toMatch(/^orders\.yaml:8:1: invalid YAML: /m);
  }, CLI_TIMEOUT_MS);

  it('an alias bomb (billion laughs) as broken YAML, not as an internal error', () => {
    const stderr = expectRejected({ 'orders.yaml': `${yamlOf({})}${ALIAS_BOMB}` });
    expect(stderr).toMatch(/^orders\.yaml: invalid YAML: Excessive alias count/m);
    expect(stderr).not.toContain('internal error');
  }, CLI_TIMEOUT_MS);

  it('two clusters in different files whose generated objects would share a name', () => {
    const stderr = expectRejected({ 'a.yaml': yamlOf({ name: 'kv' }), 'b.yaml': yamlOf({ name: 'kv-peers' }) });
    expect(stderr).toMatch(
      /^b\.yaml: metadata\.name: DistributedKV "shop\/kv-peers" would generate Service "shop\/kv-peers" as its client Service, but DistributedKV "shop\/kv" \(a\.yaml line \d+\) generates the same Service "shop\/kv-peers" as its headless Service: .*\(line \d+\)$/m,
    );
  }, CLI_TIMEOUT_MS);

  it('two clusters in different files backing up into one s3Path, every such pair, at each later cluster\'s spec.backup.s3Path', () => {
    const stderr = expectRejected({
      'a.yaml': yamlOf({ name: 'orders', backup: { ...BACKUP, s3Path: 's3://acme/shop' } }),
      'b.yaml': yamlOf({ name: 'carts', namespace: 'staging', backup: { ...BACKUP, s3Path: 's3://acme/shop/' } }),
      'c.yaml': yamlOf({ name: 'users', backup: { ...BACKUP, s3Path: 's3://acme/shop' } }),
    });
    expect(stderr).toMatch(/^b\.yaml: spec\.backup\.s3Path: DistributedKV "staging\/carts" backs up into s3:\/\/acme\/shop, the folder DistributedKV "shop\/orders" \(a\.yaml line \d+\) backs up into too: an s3Path is one cluster's own folder, .* \(line \d+\)$/m);
    expect(stderr).toMatch(/^c\.yaml: spec\.backup\.s3Path: DistributedKV "shop\/users" backs up into s3:\/\/acme\/shop, the folder DistributedKV "shop\/orders" \(a\.yaml line \d+\) backs up into too/m);
    expect(stderr).toMatch(/^c\.yaml: spec\.backup\.s3Path: DistributedKV "shop\/users" .*DistributedKV "staging\/carts" \(b\.yaml line \d+\)/m);
    expect(stderr).toContain('3 problem(s) found');
  }, CLI_TIMEOUT_MS);

  it('a cluster whose s3Path lies inside another\'s, or holds it: the outer one\'s retention would reach the inner one\'s backups', () => {
    const stderr = expectRejected({
      'a.yaml': yamlOf({ name: 'orders', backup: { ...BACKUP, s3Path: 's3://acme/r/x' } }),
      'b.yaml': yamlOf({ name: 'carts', backup: { ...BACKUP, s3Path: 's3://acme/r/x/shop/orders' } }),
      'c.yaml': yamlOf({ name: 'users', backup: { ...BACKUP, s3Path: 's3://acme/r' } }),
      'd.yaml': yamlOf({ name: 'other', backup: { ...BACKUP, s3Path: 's3://acme-other/r/x' } }),
    });
    expect(stderr).toMatch(/^b\.yaml: spec\.backup\.s3Path: DistributedKV "shop\/carts" backs up into s3:\/\/acme\/r\/x\/shop\/orders, inside s3:\/\/acme\/r\/x, the folder DistributedKV "shop\/orders" \(a\.yaml line \d+\) backs up into: /m);
    expect(stderr).toMatch(/^c\.yaml: spec\.backup\.s3Path: DistributedKV "shop\/users" backs up into s3:\/\/acme\/r, which holds s3:\/\/acme\/r\/x, the folder DistributedKV "shop\/orders" \(a\.yaml line \d+\) backs up into: /m);
    expect(stderr).toMatch(/^c\.yaml: spec\.backup\.s3Path: DistributedKV "shop\/users" backs up into s3:\/\/acme\/r, which holds s3:\/\/acme\/r\/x\/shop\/orders, the folder DistributedKV "shop\/carts" \(b\.yaml line \d+\)/m);
    expect(stderr).not.toContain('d.yaml');
    expect(stderr).toContain('3 problem(s) found');
  }, CLI_TIMEOUT_MS);

  it('several problems across two files, all in one run', () => {
    const stderr = expectRejected({
      'a.yaml': yamlOf({ name: 'alpha', size: 0, replicas: 3 }),
      'b.yaml': yamlOf({ name: 'beta', backup: { ...BACKUP, schedule: '5-3 * * * *' } }),
    });
    expect(stderr).toContain('a.yaml: spec.size: must be >= 1 (got 0)');
    expect(stderr).toContain('a.yaml: spec.replicas: unknown field');
    expect(stderr).toContain('b.yaml: spec.backup.schedule: minute range 5-3 runs backwards');
    expect(stderr).toContain('3 problem(s) found');
  }, CLI_TIMEOUT_MS);
});

describe('dkv validate', () => {
  it('rejects two clusters whose generated objects would share a name, naming both files and clusters', () => {
    const { dir } = workspace({ 'a.yaml': yamlOf({ name: 'kv' }), 'b.yaml': yamlOf({ name: 'kv-peers' }) });
    const result = dkv(['validate', 'a.yaml', 'b.yaml'], dir);
    expect(result.status).toBe(1);
    expect(result.stderr).toMatch(/^b\.yaml: metadata\.name: DistributedKV "shop\/kv-peers" .*DistributedKV "shop\/kv" \(a\.yaml line \d+\).*Service "shop\/kv-peers"/m);
  }, CLI_TIMEOUT_MS);
});

describe('dkv validate rejects a shared backup folder', () => {
  it('names both files, both clusters and spec.backup.s3Path', () => {
    const { dir } = workspace({ 'a.yaml': yamlOf({ name: 'orders', backup: BACKUP }), 'b.yaml': yamlOf({ name: 'carts', backup: BACKUP }) });
    const result = dkv(['validate', 'a.yaml', 'b.yaml'], dir);
    expect(result.status).toBe(1);
    expect(result.stderr).toMatch(/^b\.yaml: spec\.backup\.s3Path: DistributedKV "shop\/carts" backs up into s3:\/\/acme-kv-backups\/shop\/orders, the folder DistributedKV "shop\/orders" \(a\.yaml line \d+\) backs up into too/m);
  }, CLI_TIMEOUT_MS);

  it('accepts folders that only share the start of a name (s3://b/x and s3://b/xy), ', () => {
    const { dir } = workspace({
      'a.yaml': yamlOf({ name: 'orders', backup: { ...BACKUP, s3Path: 's3://acme/x' } }),
      'b.yaml': yamlOf({ name: 'carts', backup: { ...BACKUP, s3Path: 's3://acme/xy' } }),
    });
    const result = dkv(['validate', 'a.yaml', 'b.yaml'], dir);
    expect(result.stderr).not.toContain('s3Path');
    expect(result.stderr).toContain('2 DistributedKV spec(s) valid');
    expect(result.status).toBe(0);
  }, CLI_TIMEOUT_MS);
});

describe('dkv validate, offline', () => {
  it('rejects an image the etcd engine cannot run, naming the file and spec.image', () => {
    const { dir } = workspace({ 'old.yaml': yamlOf({ name: 'old', image: 'registry.k8s.io/etcd:3.4.27-0' }) });
    const result = dkv(['validate', 'old.yaml'], dir);
    expect(result.status).toBe(1);
    expect(result.stderr).toMatch(/^old\.yaml: spec\.image: etcd 3\.4\.27 is older than 3\.5\.11, the first release with the \/livez and \/readyz endpoints/m);
  }, CLI_TIMEOUT_MS);

  it('rejects backups with the generic engine and no backupImage, naming the file and spec.backup.backupImage: the default runner speaks etcd only', () => {
    const { dir } = workspace({
      'generic.config.yaml': 'engine: generic\n',
      'none.yaml': yamlOf({ name: 'none', backup: BACKUP }),
      'placeholder.yaml': yamlOf({ name: 'placeholder', backup: { ...BACKUP, backupImage: 'registry.example.com/dkv/backup:1.0.0' } }),
      'own.yaml': yamlOf({ name: 'own', backup: { ...BACKUP, backupImage: 'registry.example.com/kv/backup:2' } }),
      'nobackup.yaml': yamlOf({ name: 'nobackup' }),
    });
    const result = dkv(['validate', 'none.yaml', 'placeholder.yaml', 'own.yaml', 'nobackup.yaml', '--config', 'generic.config.yaml'], dir);
    expect(result.status).toBe(1);
    expect(result.stderr).toMatch(/^none\.yaml: spec\.backup\.backupImage: required with the generic engine: the default runner, dkv backup, backs up etcd members only; name a backup runner of your own \(line \d+\)$/m);
    expect(result.stderr).toMatch(/^placeholder\.yaml: spec\.backup\.backupImage: required with the generic engine: .* \(got "registry\.example\.com\/dkv\/backup:1\.0\.0", the former placeholder, which runs dkv backup\)/m);
    expect(result.stderr).not.toContain('own.yaml');
    expect(result.stderr).not.toContain('nobackup.yaml');
    expect(result.stderr).toContain('2 problem(s) found');
    // The etcd engine's own runner is dkv backup: the same spec is valid there.
    expect(dkv(['validate', 'none.yaml'], dir).status).toBe(0);
  }, CLI_TIMEOUT_MS);

  it('accepts an even size with a warning that names the file, the cluster and spec.size', () => {
    const { dir } = workspace({ 'even.yaml': yamlOf({ name: 'even', size: 4 }), 'odd.yaml': yamlOf({ name: 'odd', size: 3 }) });
    const result = dkv(['validate', 'even.yaml', 'odd.yaml'], dir);
    expect(result.status).toBe(0);
    expect(result.stderr).toMatch(/^warning: even\.yaml:\d+: even: spec\.size: size 4 is even: it tolerates 1 failure\(s\), as 3 members would/m);
    expect(result.stderr).not.toContain('odd.yaml');
    expect(result.stderr).toContain('2 DistributedKV spec(s) valid');
  }, CLI_TIMEOUT_MS);
});

describe('dkv synth given invalid input', () => {
  it('does not create a missing output directory', () => {
    const dir = temporaryDirectory('dkv-bad-input-');
    writeFileSync(join(dir, 'orders.yaml'), yamlOf({ size: 10 }));
    const result = dkv(['synth', '--specs', 'orders.yaml', '--out', 'never-created'], dir);
    expect(result.status).toBe(1);
    expect(existsSync(join(dir, 'never-created'))).toBe(false);
  }, CLI_TIMEOUT_MS);

  it('writes nothing for the valid files either', () => {
    const { dir, out } = workspace({ 'good.yaml': yamlOf({ name: 'good' }), 'bad.yaml': yamlOf({ name: 'bad', size: 10 }) });
    const before = readTree(out);
    const result = dkv(['synth', '--specs', 'good.yaml', '--specs', 'bad.yaml', '--out', 'out'], dir);
    expect(result.status).toBe(1);
    expect(result.stderr).toContain('bad.yaml: spec.size:');
    expect(readTree(out)).toEqual(before);
  }, CLI_TIMEOUT_MS);
});

describe('dkv validate and dkv synth reject a network policy client that is not a valid label selector', () => {
  const bad = yamlOf({
    name: 'orders',
    networkPolicy: {
      clients: [
        { podSelector: { matchLabels: { 'app/with/slashes': 'checkout' } } },
        { namespaceSelector: { matchExpressions: [{ key: 'team', operator: 'In' }] } },
        { podSelector: { matchExpressions: [{ key: 'tier', operator: 'Exists', values: ['api'] }] } },
        { podSelector: { matchLabels: { app: 'not a value' } } },
        {},
      ],
    },
  });

  it('dkv validate names the file and each field, and exits 1', () => {
    const { dir } = workspace({ 'orders.yaml': bad });
    const result = dkv(['validate', 'orders.yaml'], dir);
    expect(result.status).toBe(1);
    expect(result.stderr).not.toContain('    at ');
    expect(result.stderr).toMatch(/^orders\.yaml: spec\.networkPolicy\.clients\[0\]\.podSelector\.matchLabels\.app\/with\/slashes: must be a label key/m);
    expect(result.stderr).toMatch(/^orders\.yaml: spec\.networkPolicy\.clients\[1\]\.namespaceSelector\.matchExpressions\[0\]\.values: must hold at least one value with operator In/m);
    expect(result.stderr).toMatch(/^orders\.yaml: spec\.networkPolicy\.clients\[2\]\.podSelector\.matchExpressions\[0\]\.values: must be empty with operator Exists/m);
    expect(result.stderr).toMatch(/^orders\.yaml: spec\.networkPolicy\.clients\[3\]\.podSelector\.matchLabels\.app: must be a label value/m);
    expect(result.stderr).toMatch(/^orders\.yaml: spec\.networkPolicy\.clients\[4\]: must name a podSelector, a namespaceSelector or both/m);
    expect(result.stderr).toContain('5 problem(s) found');
  }, CLI_TIMEOUT_MS);

  it('dkv synth writes nothing', () => {
    const stderr = expectRejected({ 'orders.yaml': bad });
    expect(stderr).toContain('orders.yaml: spec.networkPolicy.clients[1].namespaceSelector.matchExpressions[0].values');
  }, CLI_TIMEOUT_MS);

  it('a configuration whose metrics or controller selector is invalid is refused, naming the configuration file and field', () => {
    const { dir } = workspace({
      'orders.yaml': yamlOf({ name: 'orders' }),
      'bad.config.yaml': 'networkPolicy:\n  metricsNamespaceSelector:\n    matchExpressions: [{ key: monitoring, operator: NotIn }]\n  controller:\n    podSelector:\n      matchLabels: { "-bad": dkv }\n',
    });
    const result = dkv(['validate', 'orders.yaml', '--config', 'bad.config.yaml'], dir);
    expect(result.status).toBe(1);
    expect(result.stderr).toMatch(/^bad\.config\.yaml: networkPolicy\.metricsNamespaceSelector\.matchExpressions\[0\]\.values: must hold at least one value with operator NotIn/m);
    expect(result.stderr).toMatch(/^bad\.config\.yaml: networkPolicy\.controller\.podSelector\.matchLabels\.-bad: must be a label key/m);
  }, CLI_TIMEOUT_MS);
});
