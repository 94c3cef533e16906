/**
 * The same input always gives the same bytes: GitOps diffs show only real
 * changes, and the CLI, cdk8s synth and the controller agree.
 */
import { cpSync, readdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { parseAllDocuments } from 'yaml';
import { toYaml } from '../../cli/render.js';
import { canonicalJson, desiredHash } from '../../model/desired-hash.js';
import type { KubeObject } from '../../model/kube-object.js';
import { synthesizeCluster } from '../../constructs/synthesize.js';
import { BACKUP, CLI_TIMEOUT_MS, DEFAULT_CONFIG, dkv, kvDocument, readTree, ROOT, SIZES, removeTemporaryDirectories, temporaryDirectory, validResource } from './support.js';

afterAll(removeTemporaryDirectories);

/**
 * `dkv synth` over a copy of examples/ into a sibling `dist/`, the layout of
 * this repository (manifests record their spec file relative to the output
 * directory); run from `cwd`, or from inside the copy.
 */
function synthExamples(cwd?: string): string {
  const dir = temporaryDirectory();
  cpSync(join(ROOT, 'examples'), join(dir, 'examples'), { recursive: true });
  const result = cwd === undefined ? dkv(['synth', '--specs', 'examples', '--out', 'dist'], dir) : dkv(['synth', '--specs', join(dir, 'examples'), '--out', join(dir, 'dist')], cwd);
  expect(result.stderr).not.toContain('    at ');
  expect(result.status).toBe(0);
  return join(dir, 'dist');
}

describe('dkv synth', () => {
  it('writes byte-identical output on every run', () => {
    const first = readTree(synthExamples());
    const second = readTree(synthExamples());
    expect(Object.keys(first)).toHaveLength(4); // three example clusters and the CRD
    expect(second).toEqual(first);
  }, CLI_TIMEOUT_MS);

  it('writes exactly the committed dist/, which cdk8s synth produces', () => {
    expect(readTree(synthExamples())).toEqual(readTree(join(ROOT, 'dist')));
  }, CLI_TIMEOUT_MS);

  it('writes the same bytes whatever directory it runs in', () => {
    expect(readTree(synthExamples(temporaryDirectory()))).toEqual(readTree(synthExamples()));
  }, CLI_TIMEOUT_MS);

  it('writes hash annotations that still match the content once read back from YAML', () => {
    const out = synthExamples();
    const files = readdirSync(out).filter((f) => !f.includes('.crd.'));
    expect(files.length).toBeGreaterThan(0);
    for (const file of files) {
      for (const doc of parseAllDocuments(readFileSync(join(out, file), 'utf8'))) {
        const object = doc.toJS() as KubeObject;
        expect(object.metadata.annotations?.[DEFAULT_CONFIG.hashAnnotation]).toBe(desiredHash(object, DEFAULT_CONFIG.hashAnnotation));
      }
    }
  }, CLI_TIMEOUT_MS);
});

describe('synthesizeCluster', () => {
  it('renders the same spec to identical canonical JSON every time', () => {
    for (const size of SIZES) {
      for (const backup of [undefined, BACKUP]) {
        const resource = validResource(kvDocument({ size, backup }));
        expect(canonicalJson(synthesizeCluster(resource, DEFAULT_CONFIG))).toBe(canonicalJson(synthesizeCluster(resource, DEFAULT_CONFIG)));
      }
    }
  });

  it('renders the same bytes whatever order the spec fields are written in', () => {
    const written = kvDocument({
      size: 5,
      backup: BACKUP,
      storage: { size: '20Gi', storageClassName: 'fast-ssd' },
      resources: { requests: { cpu: '500m', memory: '1Gi' }, limits: { cpu: 2, memory: '4Gi' } },
    });
    const reversed = JSON.parse(JSON.stringify(written), (_key, value) =>
      typeof value === 'object' && value !== null && !Array.isArray(value) ? Object.fromEntries(Object.entries(value).reverse()) : value,
    );
    expect(Object.keys(reversed.spec)).toEqual(Object.keys((written as { spec: object }).spec).reverse());
    expect(toYaml(synthesizeCluster(validResource(reversed), DEFAULT_CONFIG))).toBe(toYaml(synthesizeCluster(validResource(written), DEFAULT_CONFIG)));
  });
});
