/**
 * An unknown field is a typo far more often than an intent: the message
 * names the known field next to it that the user most likely meant, and
 * suggests nothing when no known field is close.
 */
import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { loadConfig } from '../../api/config.js';
import { customResourceDefinition } from '../../api/crd.js';
import { editDistance, nearestName } from '../../api/nearest-name.js';
import { InputError } from '../../api/problem.js';
import { SYNONYMS } from '../../api/schema-errors.js';
import { validateDistributedKV } from '../../api/validate.js';
import { BACKUP, DEFAULT_CONFIG, kvDocument, removeTemporaryDirectories, temporaryDirectory } from './support.js';

afterAll(removeTemporaryDirectories);

/** `path: message` of every problem validation finds in the document. */
function problems(document: Record<string, unknown>): string[] {
  const result = validateDistributedKV(document, DEFAULT_CONFIG);
  return result.valid ? [] : result.problems.map((p) => `${p.segments.join('.')}: ${p.message}`);
}

/** `path: message` of every problem loading the configuration text finds. */
function configProblems(text: string): string[] {
  const file = join(temporaryDirectory('dkv-unknown-'), 'dkv.config.yaml');
  writeFileSync(file, text);
  try {
    loadConfig(file);
  } catch (e) {
    if (e instanceof InputError) return e.problems.map((p) => `${p.path}: ${p.message}`);
    throw e;
  }
  throw new Error('the configuration loaded without a problem');
}

describe('the edit distance', () => {
  it('counts an insertion, a deletion, a substitution and a swap of neighbours as one edit each', () => {
    expect(editDistance('size', 'size')).toBe(0);
    expect(editDistance('size', 'sizes')).toBe(1);
    expect(editDistance('size', 'siz')).toBe(1);
    expect(editDistance('size', 'sise')).toBe(1);
    expect(editDistance('size', 'szie')).toBe(1);
    expect(editDistance('backup', 'bakcpu')).toBe(2);
    expect(editDistance('', 'abc')).toBe(3);
  });
});

describe('the nearest known name', () => {
  const spec = [{ name: 'size', synonyms: ['replicas'] }, { name: 'image' }, { name: 'storage' }, { name: 'resources' }, { name: 'backup' }, { name: 'restore' }];

  it.each([
    ['sise', 'size'],
    ['szie', 'size'],
    ['Size', 'size'],
    ['imgae', 'image'],
    ['images', 'image'],
    ['storag', 'storage'],
    ['resource', 'resources'],
    ['backups', 'backup'],
    ['replicas', 'size'],
    ['replica', 'size'],
    ['replicaz', 'size'],
  ])('reads %s as %s', (typed, meant) => {
    expect(nearestName(typed, spec)).toBe(meant);
  });

  it.each(['colour', 'nodeSelector', 'tolerations', 'sz', 'version'])('suggests nothing for %s, which no known name is close to', (typed) => {
    expect(nearestName(typed, spec)).toBeUndefined();
  });

  it('allows one edit, not two, in a name of four letters or fewer', () => {
    expect(nearestName('kinf', [{ name: 'kind' }])).toBe('kind');
    expect(nearestName('mink', [{ name: 'kind' }])).toBeUndefined();
    expect(nearestName('imaeg', [{ name: 'image' }])).toBe('image');
    expect(nearestName('imxxe', [{ name: 'image' }])).toBe('image');
  });

  it('prefers the closest name, and on a tie the first', () => {
    expect(nearestName('restor', spec)).toBe('restore');
    expect(nearestName('ab', [{ name: 'a' }, { name: 'b' }])).toBe('a');
  });
});

describe('a spec with an unknown field', () => {
  it('names the field meant, at any depth', () => {
    expect(problems(kvDocument({ replicaz: 3 }))).toEqual(['spec.replicaz: unknown field; did you mean spec.size?']);
    expect(problems(kvDocument({ imgae: 'kv:1' }))).toContain('spec.imgae: unknown field; did you mean spec.image?');
    expect(problems(kvDocument({ backup: { ...BACKUP, schedul: '@daily' } as typeof BACKUP }))).toContain('spec.backup.schedul: unknown field; did you mean spec.backup.schedule?');
    expect(problems(kvDocument({ storage: { size: '1Gi', storageClasName: 'fast' } }))).toEqual(['spec.storage.storageClasName: unknown field; did you mean spec.storage.storageClassName?']);
    expect(problems(kvDocument({ resources: { request: { cpu: '1' } } }))).toEqual(['spec.resources.request: unknown field; did you mean spec.resources.requests?']);
  });

  it('names the field Kubernetes users know by another name: replicas is size', () => {
    expect(problems(kvDocument({ replicas: 3 }))).toEqual(['spec.replicas: unknown field; did you mean spec.size?']);
  });

  it('names the top-level field meant', () => {
    const { spec, ...rest } = kvDocument();
    expect(problems({ ...rest, sepc: spec })).toEqual(['spec: required field is missing', 'sepc: unknown field; did you mean spec?']);
  });

  it('says only "unknown field" when no known field is close', () => {
    expect(problems(kvDocument({ nodeSelector: { disk: 'ssd' } }))).toEqual(['spec.nodeSelector: unknown field']);
    expect(problems({ ...kvDocument(), extra: true })).toEqual(['extra: unknown field']);
  });
});

describe('a configuration file with an unknown key', () => {
  it('names the key meant, at the top level and nested', () => {
    expect(configProblems('lables:\n  app: kv\n')).toEqual(['lables: unknown field; did you mean labels?']);
    expect(configProblems('names:\n  statefulset: "{name}"\n')).toEqual(['names.statefulset: unknown field; did you mean names.statefulSet?']);
    expect(configProblems('ports:\n  clinet: 2379\n')).toEqual(['ports.clinet: unknown field; did you mean ports.client?']);
  });

  it('says only "unknown field" when no known key is close', () => {
    expect(configProblems('tolerations: []\n')).toEqual(['tolerations: unknown field']);
  });
});

describe('the synonyms', () => {
  it('stay out of the CRD: the API server would reject an unknown keyword in a structural schema', () => {
    expect(JSON.stringify(customResourceDefinition(DEFAULT_CONFIG))).not.toContain(SYNONYMS);
  });
});
