/**
 * The CustomResourceDefinition is derived from the JSON Schema, so the API
 * server accepts and rejects what the generator does.
 */
import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import type { GeneratorConfig } from '../../api/config.js';
import { loadCheckedConfig } from '../../constructs/config-check.js';
import { customResourceDefinition } from '../../api/crd.js';
import { SCHEMA } from '../../api/validate.js';
import { STORAGE_VERSION } from '../../api/versions.js';
import { DNS1035_LABEL, maxClusterNameLength, nameProblems } from '../../model/cluster-identity.js';
import { DEFAULT_CONFIG, removeTemporaryDirectories, temporaryDirectory } from './support.js';

afterAll(removeTemporaryDirectories);

/** The storage version's entry (the older served versions derive from the same schema: test/generator/conversion.test.ts). */
function version(config: GeneratorConfig = DEFAULT_CONFIG): any {
  const crd = customResourceDefinition(config) as any;
  expect(crd.spec.versions.map((v: any) => v.name)).toEqual([STORAGE_VERSION, 'v1alpha1']);
  return crd.spec.versions[0];
}

const specSchema = (): any => version().schema.openAPIV3Schema.properties.spec;

/** Every [path, value] pair in a JSON tree. */
function walk(node: unknown, path: string[] = []): [string[], unknown][] {
  if (typeof node !== 'object' || node === null) return [];
  return Object.entries(node).flatMap(([key, value]) => [[[...path, key], value] as [string[], unknown], ...walk(value, [...path, key])]);
}

function nameLengthRule(config: GeneratorConfig): number {
  const rules: { rule: string }[] = version(config).schema.openAPIV3Schema['x-kubernetes-validations'];
  const lengths = rules.map((r) => /^self\.metadata\.name\.size\(\) <= (\d+)$/.exec(r.rule)).filter((m) => m !== null);
  expect(lengths).toHaveLength(1);
  return Number(lengths[0]![1]);
}

describe('the DistributedKV CRD', () => {
  it('lets the controller write status only through the status subresource', () => {
    expect(version().subresources).toEqual({ status: {} });
  });

  it('shows Size, Ready, Status, how full the fullest member is, and Age in kubectl get', () => {
    const columns: { name: string; jsonPath: string }[] = version().additionalPrinterColumns;
    expect(columns.map((c) => c.name)).toEqual(['Size', 'Ready', 'Status', 'Full', 'Age']);
    expect(columns.find((c) => c.name === 'Full')!.jsonPath).toBe('.status.databaseFullPercent');
    expect(columns.find((c) => c.name === 'Size')!.jsonPath).toBe('.spec.size');
    expect(columns.find((c) => c.name === 'Age')!.jsonPath).toBe('.metadata.creationTimestamp');
  });

  it('accepts sizes 1 to 9 only', () => {
    expect(specSchema().properties.size).toMatchObject({ type: 'integer', minimum: 1, maximum: 9 });
  });

  it('requires size and image', () => {
    expect([...specSchema().required].sort()).toEqual(['image', 'size']);
  });

  it('checks the S3 path with exactly the JSON Schema pattern', () => {
    const pattern = specSchema().properties.backup.properties.s3Path.pattern;
    expect(pattern).toBe(SCHEMA.definitions.DistributedKVSpec.properties.backup.properties.s3Path.pattern);
    expect(new RegExp(pattern).test('s3://acme-kv-backups/shop/orders')).toBe(true);
  });

  it('gives the backup image no default: unset, the CronJob runs dkv backup from the configured runner image', () => {
    expect(specSchema().properties.backup.properties.backupImage).not.toHaveProperty('default');
    expect(SCHEMA.definitions.DistributedKVSpec.properties.backup.properties.backupImage).not.toHaveProperty('default');
  });

  it('is structural: no $ref and no additionalProperties: false anywhere', () => {
    const crd = customResourceDefinition(DEFAULT_CONFIG);
    const refs = walk(crd).filter(([path]) => path[path.length - 1] === '$ref');
    const closed = walk(crd).filter(([path, value]) => path[path.length - 1] === 'additionalProperties' && value === false);
    expect(refs.map(([path]) => path.join('.'))).toEqual([]);
    expect(closed.map(([path]) => path.join('.'))).toEqual([]);
  });

  it('states the same name pattern the generator checks', () => {
    const rules: { rule: string }[] = version().schema.openAPIV3Schema['x-kubernetes-validations'];
    expect(rules.map((r) => r.rule)).toContain(`self.metadata.name.matches('${DNS1035_LABEL.source}')`);
  });

  it('limits metadata.name to the longest name the generator accepts', () => {
    const max = maxClusterNameLength(DEFAULT_CONFIG);
    expect(nameLengthRule(DEFAULT_CONFIG)).toBe(max);
    expect(nameProblems('a'.repeat(max), DEFAULT_CONFIG)).toEqual([]);
    expect(nameProblems('a'.repeat(max + 1), DEFAULT_CONFIG)).not.toEqual([]);
  });

  it('follows the configuration when longer name templates shorten the allowed name', () => {
    const file = join(temporaryDirectory('dkv-crd-'), 'dkv.config.yaml');
    writeFileSync(file, 'names:\n  statefulSet: "{name}-distributed-kv-members"\n');
    const config = loadCheckedConfig(file);
    const max = maxClusterNameLength(config);
    expect(max).toBeLessThan(maxClusterNameLength(DEFAULT_CONFIG));
    expect(nameLengthRule(config)).toBe(max);
    expect(nameProblems('a'.repeat(max), config)).toEqual([]);
    expect(nameProblems('a'.repeat(max + 1), config)).not.toEqual([]);
  });
});
