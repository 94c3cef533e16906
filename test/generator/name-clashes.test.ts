/**
 * Two DistributedKVs must never generate the same object: applied, each
 * would overwrite the other's. The rule is computed from the name templates,
 * so it follows the configuration and can be shared with the controller.
 */
import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { loadCheckedConfig } from '../../constructs/config-check.js';
import { findNameClashes, generatedNames } from '../../constructs/name-clashes.js';
import { BACKUP, DEFAULT_CONFIG, kvDocument, SIZES, synth, removeTemporaryDirectories, temporaryDirectory, validResource, type ClusterOptions } from './support.js';

afterAll(removeTemporaryDirectories);

const cluster = (options: ClusterOptions) => validResource(kvDocument(options));

/** Each clash as `Kind namespace/name: first cluster's role / second cluster's role`. */
const described = (clashes: ReturnType<typeof findNameClashes>): string[] =>
  clashes.map(({ first, second }) => `${first.object.kind} ${first.object.namespace}/${first.object.name}: ${first.resource.metadata.name} ${first.role} / ${second.resource.metadata.name} ${second.role}`);

const MESH_CONFIG = (() => {
  const file = join(temporaryDirectory('dkv-clash-'), 'dkv.config.yaml');
  writeFileSync(file, 'names:\n  statefulSet: "{name}-members"\n  headlessService: "{name}-mesh"\n  podDisruptionBudget: "{name}-budget"\n');
  return loadCheckedConfig(file);
})();

describe('findNameClashes', () => {
  it('finds one cluster\'s headless Service and another\'s client Service sharing a name', () => {
    const clashes = findNameClashes([cluster({ name: 'kv' }), cluster({ name: 'kv-peers' })], DEFAULT_CONFIG);
    expect(described(clashes)).toEqual(['Service shop/kv-peers: kv headless Service / kv-peers client Service']);
    expect(clashes[0].first.index).toBe(0);
    expect(clashes[0].second.index).toBe(1);
  });

  it('follows the configured name templates, not fixed suffixes', () => {
    const resources = [cluster({ name: 'kv' }), cluster({ name: 'kv-peers' }), cluster({ name: 'kv-mesh' })];
    expect(described(findNameClashes(resources, MESH_CONFIG))).toEqual(['Service shop/kv-mesh: kv headless Service / kv-mesh client Service']);
  });

  it('finds no clash between clusters in different namespaces', () => {
    expect(findNameClashes([cluster({ name: 'kv', namespace: 'shop' }), cluster({ name: 'kv-peers', namespace: 'staging' })], DEFAULT_CONFIG)).toEqual([]);
  });

  it('leaves a cluster defined twice to the duplicate check', () => {
    expect(findNameClashes([cluster({ name: 'kv' }), cluster({ name: 'kv', size: 5 })], DEFAULT_CONFIG)).toEqual([]);
  });
});

describe('generatedNames', () => {
  it('lists exactly the objects synthesizeCluster renders, for every size, with and without backup, under any name templates', () => {
    for (const config of [DEFAULT_CONFIG, MESH_CONFIG]) {
      for (const size of SIZES) {
        for (const backup of [undefined, BACKUP]) {
          const rendered = synth({ size, backup }, config).map((o) => `${o.kind} ${o.metadata.namespace}/${o.metadata.name}`);
          const listed = generatedNames(cluster({ size, backup }), config).map((o) => `${o.kind} ${o.namespace}/${o.name}`);
          expect(listed.sort()).toEqual(rendered.sort());
        }
      }
    }
  });
});
