/**
 * What sets the probes that show a problem apart from the others, for a
 * message: "a cluster with no resources or resource requests only". Each
 * varied section whose failing variants are not all of its variants is
 * named; undefined when every probe fails (the problem is not about the
 * spec's shape).
 */
export function commonShape(failing: readonly ProbeSpec[], all: readonly ProbeSpec[]): string | undefined {
  if (failing.length === 0 || failing.length === all.length) return undefined;
  const variantsAt = (probes: readonly ProbeSpec[], d: number): string[] => [...new Set(probes.map((p) => p.variants[d]))];
  const parts = failing[0].variants
    .map((_, d) => variantsAt(failing, d))
    .filter((variants, d) => variants.length < variantsAt(all, d).length)
    .map((variants) => variants.join(' or '));
  return `a cluster with ${(parts.length > 0 ? parts : failing[0].variants).join(', ')}`;
}

/**
 * The clusters a configuration is tried on when it is loaded. A patch that
 * applies to one spec may not apply to another: `remove` of the container's
 * resource requests fails for a spec with limits only (a spec's resources
 * replace the configured defaults whole), a patch of the volume claim's
 * storageClassName for a spec without one. So the probes cover every optional
 * section of the spec both present and absent, in every combination, and the
 * smallest and largest size; whatever a patch does to one of them it does to
 * a user's spec of the same shape.
 */
import type { GeneratorConfig } from './config.js';
import { validateDistributedKV, API_VERSION, KIND, type ValidResource } from './validate.js';

/** One probe cluster, and what it is made of, for messages: `['size 1', 'no backup', ...]`, one entry per varied section. */
export interface ProbeSpec {
  readonly resource: ValidResource;
  readonly variants: readonly string[];
}

type Variant = readonly [description: string, value: object | undefined];

const SIZES: readonly Variant[] = [['size 1', { size: 1 }], ['size 9', { size: 9 }]];
const BACKUPS: readonly Variant[] = [
  ['no backup', undefined],
  ['a backup without backupImage', { backup: { s3Path: 's3://probe/p', schedule: '0 2 * * *' } }],
  ['a backup with backupImage', { backup: { s3Path: 's3://probe/p', schedule: '0 2 * * *', backupImage: 'probe-backup:1' } }],
];
const STORAGE: readonly Variant[] = [
  ['no storage section', undefined],
  ['storage without storageClassName', { storage: { size: '1Gi' } }],
  ['storage with storageClassName', { storage: { size: '1Gi', storageClassName: 'probe' } }],
];
const RESOURCES: readonly Variant[] = [
  ['no resources', undefined],
  ['resource requests only', { resources: { requests: { cpu: '1', memory: '1Gi' } } }],
  ['resource limits only', { resources: { limits: { cpu: '1', memory: '1Gi' } } }],
  ['resource requests and limits', { resources: { requests: { cpu: '1', memory: '1Gi' }, limits: { cpu: '1', memory: '1Gi' } } }],
];

/** Every combination of the variants: 2 × 3 × 3 × 4 = 72 clusters, each validated (defaults applied) as a user's spec is. */
export function probeSpecs(config: GeneratorConfig): ProbeSpec[] {
  const probes: ProbeSpec[] = [];
  for (const size of SIZES) {
    for (const backup of BACKUPS) {
      for (const storage of STORAGE) {
        for (const resources of RESOURCES) {
          const variants = [size, backup, storage, resources];
          const spec = Object.assign({ image: 'probe:1' }, ...variants.map(([, value]) => value ?? {}));
          const result = validateDistributedKV({ apiVersion: API_VERSION, kind: KIND, metadata: { name: 'probe', namespace: 'probe' }, spec }, config);
          // Only a configuration whose name templates leave no room for a five-letter name, or an engine that needs
          // a backupImage, makes a probe invalid; every cluster of that shape is rejected by its own validation anyway.
          if (result.valid) probes.push({ resource: result.resource, variants: variants.map(([description]) => description) });
        }
      }
    }
  }
  return probes;
}
