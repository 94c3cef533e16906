import type { GeneratorConfig } from '../api/config.js';
import { CRD_NAME, customResourceDefinition } from '../api/crd.js';
import { synthesizeCluster } from '../constructs/synthesize.js';
import type { SpecDocument } from './read-specs.js';
import { manifestHeader } from './manifest-header.js';
import { yamlDocument } from '../model/yaml-writer.js';

/** Suffix of every file `dkv synth` writes; also what it may prune from an output directory (see prune.ts). */
export const MANIFEST_SUFFIX = '.k8s.yaml';
export const CRD_FILE = `${CRD_NAME}.crd${MANIFEST_SUFFIX}`;

/** One cluster's output file: `<namespace>.<name>.k8s.yaml`, or `<name>.k8s.yaml` without a namespace. */
export function manifestFileName(spec: Pick<SpecDocument, 'resource'>): string {
  const { name, namespace } = spec.resource.metadata;
  return `${namespace ? `${namespace}.` : ''}${name}${MANIFEST_SUFFIX}`;
}

/** Deterministic YAML: keys sorted, one document per object. */
export function toYaml(objects: readonly object[]): string {
  return objects.map((o) => yamlDocument(o as Record<string, unknown>)).join('---\n');
}

/**
 * What one spec adds to `dkv synth`'s output: its file name and content,
 * starting with the header that records which spec file it came from
 * (manifest-header.ts). render-worker.ts renders some of them on another thread.
 */
export function renderManifest(spec: Pick<SpecDocument, 'file' | 'resource'>, config: GeneratorConfig, outDir: string): [string, string] {
  return [manifestFileName(spec), manifestHeader(outDir, spec.file) + toYaml(synthesizeCluster(spec.resource, config))];
}

/** The CRD's file and content, the first file of every run. */
export function crdManifest(config: GeneratorConfig, outDir: string): [string, string] {
  return [CRD_FILE, manifestHeader(outDir) + toYaml([customResourceDefinition(config)])];
}
