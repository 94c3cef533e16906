/**
 * `cdk8s synth --format helm`, the cdk8s CLI's own Helm output, over the
 * bundled examples: a chart whose templates are the manifests `dkv synth`
 * writes into dist/ (only their generated-by headers differ: they name the
 * spec file relative to where they are written).
 */
import { execFileSync } from 'node:child_process';
import { mkdtempSync, readdirSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { parse, parseAllDocuments } from 'yaml';
import { ROOT } from './support.js';

const documents = (file: string): unknown[] => parseAllDocuments(readFileSync(file, 'utf8')).map((d) => d.toJS());

describe('cdk8s synth --format helm', () => {
  let out: string;

  beforeAll(() => {
    out = join(mkdtempSync(join(tmpdir(), 'dkv-helm-')), 'chart');
    execFileSync(join(ROOT, 'node_modules', '.bin', 'cdk8s'), ['synth', '--format', 'helm', '--chart-version', '0.1.0', '--output', out], { cwd: ROOT, stdio: ['ignore', 'pipe', 'pipe'] });
  }, 120_000);

  afterAll(() => rmSync(join(out, '..'), { recursive: true, force: true }));

  it('writes a Helm chart whose templates are exactly the objects of dist/', () => {
    expect(parse(readFileSync(join(out, 'Chart.yaml'), 'utf8'))).toMatchObject({ apiVersion: 'v2', version: '0.1.0', type: 'application' });
    const templates = readdirSync(join(out, 'templates')).sort();
    expect(templates).toEqual(readdirSync(join(ROOT, 'dist')).filter((f) => f.endsWith('.k8s.yaml')).sort());
    for (const file of templates) expect([file, documents(join(out, 'templates', file))]).toEqual([file, documents(join(ROOT, 'dist', file))]);
  });
});
