/**
 * `dkv export` and `dkv import` against a real kube-apiserver, as an upgrade
 * or a rebuilt cluster uses them: the export holds the definitions as their
 * authors wrote them (what dkv synth renders exactly as it renders the
 * originals), an import brings deleted clusters back as they were, a second
 * import writes nothing, a spec changed since the export is refused unless
 * --overwrite, and a broken file stops the import before any write.
 */
import { copyFileSync, mkdirSync, mkdtempSync, readdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { parseAllDocuments } from 'yaml';
import { API_VERSION, KIND } from '../../api/validate.js';
import { LAST_APPLIED_ANNOTATION } from '../../api/exported-definition.js';
import { yamlDocument } from '../../model/yaml-writer.js';
import { resourcePath, type KubeClient } from '../../kube/client.js';
import { dkv } from '../support/dkv-cli.js';
import { createNamespace, describeWithCluster, eventually, installCrd, isApiError, testClient } from '../cluster/kube.js';

const IMAGE = 'registry.k8s.io/etcd:3.6.8-0';
/** Fields the API server sets: none may be in an exported file. */
const SERVER_FIELDS = ['uid', 'resourceVersion', 'generation', 'creationTimestamp', 'managedFields', 'deletionTimestamp', 'finalizers', 'ownerReferences'];

interface Definition {
  apiVersion: string;
  kind: string;
  metadata: { name: string; namespace: string; labels?: Record<string, string>; annotations?: Record<string, string> };
  spec: Record<string, unknown>;
}

/** Every object of every manifest in a directory, by file name: comments (the header naming the spec file) are not objects. */
function manifests(dir: string): Record<string, unknown[]> {
  const objects = (file: string): unknown[] => (parseAllDocuments(readFileSync(join(dir, file), 'utf8')) as unknown as { toJS(): unknown }[]).map((d) => d.toJS());
  return Object.fromEntries(readdirSync(dir).sort().map((file) => [file, objects(file)]));
}

describeWithCluster('dkv export and dkv import against a real API server', () => {
  const kubeconfig = process.env.DKV_TEST_KUBECONFIG!;
  let client: KubeClient;
  let work: string;
  let shop: string;
  let web: string;
  let definitions: Definition[];
  /** The per-namespace exports every later step imports from. */
  let exported: string;
  /** The original spec files, as a user keeps them. */
  let specs: string;

  const path = (d: Definition): string => resourcePath(API_VERSION, KIND, d.metadata.namespace, d.metadata.name);
  const get = (d: Definition): Promise<Record<string, any>> => client.request('GET', path(d));
  const resourceVersions = async (): Promise<string[]> => Promise.all(definitions.map(async (d) => (await get(d)).metadata.resourceVersion as string));
  const run = (...args: string[]) => dkv(args, {});
  const fileOf = (d: Definition): string => `${d.metadata.namespace}.${d.metadata.name}.yaml`;
  const deleteAndWait = async (d: Definition): Promise<void> => {
    await client.request('DELETE', path(d));
    await eventually(`${d.metadata.namespace}/${d.metadata.name} to be gone`, async () => {
      try {
        await get(d);
        return undefined;
      } catch (e) {
        if (isApiError(e, 404)) return true;
        throw e;
      }
    });
  };

  beforeAll(async () => {
    client = testClient();
    await installCrd(client);
    shop = await createNamespace(client, 'export-shop');
    web = await createNamespace(client, 'export-web');
    work = mkdtempSync(join(tmpdir(), 'dkv-export-'));
    exported = join(work, 'exported');
    specs = join(work, 'specs');
    mkdirSync(specs);
    definitions = [
      { apiVersion: API_VERSION, kind: KIND, metadata: { name: 'orders', namespace: shop }, spec: { size: 3, image: IMAGE, backup: { s3Path: 's3://acme-kv-backups/shop/orders', schedule: '0 2 * * *' } } },
      { apiVersion: API_VERSION, kind: KIND, metadata: { name: 'carts', namespace: shop, labels: { team: 'checkout', tier: 'cache' }, annotations: { 'example.com/owner': 'checkout@example.com' } }, spec: { size: 1, image: IMAGE } },
      { apiVersion: API_VERSION, kind: KIND, metadata: { name: 'sessions', namespace: web }, spec: { size: 5, image: IMAGE, storage: { size: '2Gi' } } },
    ];
    // The live objects also carry what kubectl apply adds.
    for (const d of definitions) {
      writeFileSync(join(specs, `${d.metadata.name}.yaml`), yamlDocument(d as unknown as Record<string, unknown>));
      const annotations = { ...d.metadata.annotations, [LAST_APPLIED_ANNOTATION]: JSON.stringify(d) };
      await client.request('POST', resourcePath(API_VERSION, KIND, d.metadata.namespace), { body: { ...d, metadata: { ...d.metadata, annotations } } });
    }
    // What a controller reported: the export carries it as a comment.
    await client.request('PATCH', `${path(definitions[0])}/status`, { body: { status: { readyReplicas: 2, observedGeneration: 1 } }, contentType: 'application/merge-patch+json' });
  });

  afterAll(async () => {
    for (const ns of [shop, web]) if (ns) await client.request('DELETE', `/api/v1/namespaces/${ns}`).catch(() => undefined);
    client?.close();
    if (work) rmSync(work, { recursive: true, force: true });
  });

  it('exports every namespace by default, one <namespace>.<name>.yaml per cluster', async () => {
    const all = join(work, 'all');
    const result = await run('export', '--out', all, '--kubeconfig', kubeconfig);
    expect(result.stderr).toMatch(/^exported \d+ DistributedKV\(s\) from https:/);
    expect(result.status).toBe(0);
    expect(readdirSync(all)).toEqual(expect.arrayContaining(definitions.map(fileOf)));
  });

  it('exports one namespace with --namespace: metadata and spec without server fields, a header and the status as a comment', async () => {
    for (const ns of [shop, web]) {
      const result = await run('export', '--out', exported, '--namespace', ns, '--kubeconfig', kubeconfig);
      expect(result.stderr).toBe(`exported ${ns === shop ? 2 : 1} DistributedKV(s) from ${client.server} into ${exported}\n`);
      expect(result.status).toBe(0);
    }
    expect(readdirSync(exported).sort()).toEqual(definitions.map(fileOf).sort());
    for (const d of definitions) {
      const text = readFileSync(join(exported, fileOf(d)), 'utf8');
      expect(text.split('\n')[0]).toMatch(new RegExp(`^# Exported by dkv export from ${client.server.replace(/[.*+?^${}()|[\]\\]/g, '\\$&')} at \\d{4}-\\d\\d-\\d\\dT`));
      const object = parseAllDocuments(text) as unknown as { toJS(): Definition }[];
      expect(object).toHaveLength(1);
      const { metadata, ...rest } = object[0].toJS();
      expect(Object.keys(rest).sort()).toEqual(['apiVersion', 'kind', 'spec']);
      const { labels, annotations } = d.metadata;
      expect(metadata).toEqual({ name: d.metadata.name, namespace: d.metadata.namespace, ...(labels ? { labels } : {}), ...(annotations ? { annotations } : {}) });
      for (const field of [...SERVER_FIELDS, LAST_APPLIED_ANNOTATION, 'status:']) expect(text.replace(/^#.*\n/gm, '')).not.toContain(field);
    }
    const orders = readFileSync(join(exported, fileOf(definitions[0])), 'utf8');
    expect(orders).toMatch(/^# status at export[^\n]*\n(# {3}[^\n]*\n)*# {3}readyReplicas: 2\n/m);
    expect(readFileSync(join(exported, fileOf(definitions[1])), 'utf8').split('\n')[1]).toBe('# status at export: none (no controller had reported on it)');
  });

  it('is what dkv synth renders exactly as it renders the original specs', async () => {
    const fromExport = await run('synth', '--specs', exported, '--out', join(work, 'from-export'));
    expect(fromExport.stderr).toContain('synthesized 3 cluster(s)');
    expect(fromExport.status).toBe(0);
    const original = await run('synth', '--specs', specs, '--out', join(work, 'from-specs'));
    expect(original.status).toBe(0);
    const rendered = manifests(join(work, 'from-export'));
    expect(Object.keys(rendered)).toHaveLength(4); // three clusters and the CRD
    expect(rendered).toEqual(manifests(join(work, 'from-specs')));
  });

  it('brings deleted clusters back with the same spec, labels and annotations', async () => {
    const before = await Promise.all(definitions.map(get));
    for (const d of definitions) await deleteAndWait(d);
    const result = await run('import', '--from', exported, '--kubeconfig', kubeconfig);
    expect(result.status).toBe(0);
    for (const [i, d] of definitions.entries()) {
      expect(result.stderr).toContain(`created ${d.metadata.namespace}/${d.metadata.name} from ${join(exported, fileOf(d))}`);
      const live = await get(d);
      expect(live.spec).toEqual(before[i].spec);
      expect(live.metadata.labels).toEqual(d.metadata.labels);
      expect(live.metadata.annotations).toEqual(d.metadata.annotations);
      expect(live.metadata.managedFields.map((f: { manager: string }) => f.manager)).toEqual(['dkv-import']);
    }
  });

  it('changes nothing when imported again', async () => {
    const before = await resourceVersions();
    const result = await run('import', '--from', exported, '--kubeconfig', kubeconfig);
    expect(result.status).toBe(0);
    for (const d of definitions) expect(result.stderr).toContain(`unchanged ${d.metadata.namespace}/${d.metadata.name}`);
    expect(await resourceVersions()).toEqual(before);
  });

  it('refuses a cluster whose spec changed since the export, naming it, and writes nothing', async () => {
    const [orders] = definitions;
    await client.request('PATCH', path(orders), { body: { spec: { size: 5 } }, contentType: 'application/merge-patch+json' });
    const before = await resourceVersions();
    const result = await run('import', '--from', exported, '--kubeconfig', kubeconfig);
    expect(result.status).toBe(1);
    expect(result.stderr).toContain(`${join(exported, fileOf(orders))}: spec: DistributedKV "${shop}/orders" exists with a different spec (differs at spec.size); --overwrite applies the file's spec`);
    expect(result.stderr).toContain('1 problem(s) found; nothing was written');
    expect(await resourceVersions()).toEqual(before);
    expect((await get(orders)).spec.size).toBe(5);
  });

  it('restores that spec with --overwrite, applied as dkv-import', async () => {
    const [orders] = definitions;
    const result = await run('import', '--from', exported, '--kubeconfig', kubeconfig, '--overwrite');
    expect(result.stderr).toContain(`overwrote ${shop}/orders from ${join(exported, fileOf(orders))} (was different at spec.size)`);
    expect(result.status).toBe(0);
    const live = await get(orders);
    expect(live.spec.size).toBe(3);
    expect(live.metadata.managedFields).toContainEqual(expect.objectContaining({ manager: 'dkv-import', operation: 'Apply' }));
  });

  it('stops at a broken file, naming the file and the field, before writing anything', async () => {
    const broken = join(work, 'broken');
    // A copy of the export, one cluster of which is missing: an import that wrote anything would create it.
    mkdirSync(broken);
    for (const d of definitions) copyFileSync(join(exported, fileOf(d)), join(broken, fileOf(d)));
    writeFileSync(join(broken, 'zz.bad.yaml'), yamlDocument({ ...definitions[2], metadata: { name: 'bad', namespace: web }, spec: { size: 10, image: IMAGE } }));
    const [, carts] = definitions;
    await deleteAndWait(carts);
    const before = await Promise.all(definitions.filter((d) => d !== carts).map(async (d) => (await get(d)).metadata.resourceVersion));
    const result = await run('import', '--from', broken, '--kubeconfig', kubeconfig);
    expect(result.status).toBe(1);
    expect(result.stderr).toContain(`${join(broken, 'zz.bad.yaml')}: spec.size: must be <= 9 (got 10)`);
    expect(result.stderr).toContain('nothing was written');
    await expect(get(carts)).rejects.toMatchObject({ status: 404 });
    expect(await Promise.all(definitions.filter((d) => d !== carts).map(async (d) => (await get(d)).metadata.resourceVersion))).toEqual(before);
  });
});
