/**
 * `dkv synth` never switches a cluster's peer traffic between plain HTTP and
 * TLS in the manifests a GitOps repository applies (cli/peer-scheme-guard.ts):
 * the manifest it wrote last is what runs, and a scheme changed in one
 * rollout cuts the members apart. The typical case: a spec written before
 * TLS became the default for a spec without `tls`.
 */
import { mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { stringify } from 'yaml';
import { CLI_TIMEOUT_MS, dkv, kvDocument, readTree, removeTemporaryDirectories, temporaryDirectory } from './support.js';

afterAll(removeTemporaryDirectories);

const ETCD = 'registry.k8s.io/etcd:3.6.8-0';
const spec = (tls?: Record<string, unknown>) => stringify(kvDocument({ name: 'orders', image: ETCD, ...(tls ? { tls } : {}) }));

function workspace(): string {
  const dir = temporaryDirectory('dkv-peer-scheme-');
  mkdirSync(join(dir, 'specs'));
  return dir;
}

function synthWith(dir: string, text: string) {
  writeFileSync(join(dir, 'specs', 'orders.yaml'), text);
  return dkv(['synth', '--specs', 'specs', '--out', 'out'], dir);
}

const manifest = (dir: string) => readFileSync(join(dir, 'out', 'shop.orders.k8s.yaml'), 'utf8');

describe('dkv synth and a cluster whose manifest already runs', () => {
  it('refuses a spec without tls for a cluster whose manifest runs plain HTTP, naming file and field, and writes nothing', () => {
    const dir = workspace();
    expect(synthWith(dir, spec({ mode: 'disabled' })).status).toBe(0);
    const plain = manifest(dir);
    expect(plain).toContain('--listen-peer-urls=http://');
    const before = readTree(join(dir, 'out'));

    const refused = synthWith(dir, spec());
    expect(refused.status).toBe(1);
    expect(refused.stderr).toContain('specs/orders.yaml: spec.tls:');
    expect(refused.stderr).toContain('from http to https');
    expect(refused.stderr).toContain('set spec.tls.mode: disabled');
    expect(manifest(dir)).toBe(plain);
    // The refusal comes after rendering, when every file was already staged (manifest-staging.ts): none is left behind.
    expect(readTree(join(dir, 'out'))).toEqual(before);
  }, CLI_TIMEOUT_MS);

  it('refuses to turn a TLS cluster plain', () => {
    const dir = workspace();
    expect(synthWith(dir, spec()).status).toBe(0);
    const tls = manifest(dir);
    expect(tls).toContain('--listen-peer-urls=https://');
    const refused = synthWith(dir, spec({ mode: 'disabled' }));
    expect(refused.status).toBe(1);
    expect(refused.stderr).toContain('from https to http');
    expect(manifest(dir)).toBe(tls);
  }, CLI_TIMEOUT_MS);

  it('renders a new cluster with TLS, and keeps rendering a plain one that says so', () => {
    const fresh = workspace();
    expect(synthWith(fresh, spec()).status).toBe(0);
    expect(manifest(fresh)).toContain('--listen-peer-urls=https://');
    const plain = workspace();
    expect(synthWith(plain, spec({ mode: 'disabled' })).status).toBe(0);
    const again = synthWith(plain, spec({ mode: 'disabled' }));
    expect(again.status).toBe(0);
    expect(manifest(plain)).toContain('--listen-peer-urls=http://');
  }, CLI_TIMEOUT_MS);
});
