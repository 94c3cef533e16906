/**
 * kubectl, built at the control plane's own Kubernetes release by
 * test/cluster/build.sh, works against the test control plane: what a user
 * debugging a test types (`npm run cluster` prints how) is the real client,
 * and a DistributedKV reads in it as a user's cluster would show it, through
 * the CRD's printer columns.
 */
import { execFile } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { API_VERSION, KIND } from '../../api/validate.js';
import { resourcePath, type KubeClient } from '../../kube/client.js';
import { buildBinaries, LATER_BINARIES_BUILD_MS } from '../cluster/binaries.js';
import { createNamespace, describeWithCluster, installCrd, testClient } from '../cluster/kube.js';

const run = promisify(execFile);

describeWithCluster('kubectl against the test control plane', () => {
  let kubectlPath: string;
  let cacheDir: string;
  let client: KubeClient;
  let namespace: string;

  /** kubectl's stdout; its discovery cache in a directory of this file's own, not the user's ~/.kube. */
  const kubectl = async (...args: string[]): Promise<string> =>
    (await run(kubectlPath, [`--cache-dir=${cacheDir}`, ...args], { env: { ...process.env, KUBECONFIG: process.env.DKV_TEST_KUBECONFIG }, encoding: 'utf8' })).stdout;

  beforeAll(async () => {
    // Built by global setup's background build, usually before this file runs; else built, or waited for, here.
    kubectlPath = join(await buildBinaries(['kubectl']), 'kubectl');
    cacheDir = mkdtempSync(join(tmpdir(), 'dkv-kubectl-cache-'));
    client = testClient();
    await installCrd(client);
    namespace = await createNamespace(client, 'kubectl');
  }, 60_000 + LATER_BINARIES_BUILD_MS);

  afterAll(() => {
    client?.close();
    if (cacheDir) rmSync(cacheDir, { recursive: true, force: true });
  });

  it('is the control plane\'s own release, and reaches it through KUBECONFIG', async () => {
    const { clientVersion, serverVersion } = JSON.parse(await kubectl('version', '--output=json'));
    expect(serverVersion.gitVersion).toMatch(/^v1\.36\.\d+$/);
    expect(clientVersion.gitVersion).toBe(serverVersion.gitVersion);
    expect(JSON.parse(await kubectl('get', '--raw', '/version')).gitVersion).toBe(serverVersion.gitVersion);
  });

  it('sees the DistributedKV CRD, Established', async () => {
    const established = await kubectl('get', 'crd', 'distributedkvs.example.com', '--output=jsonpath={.status.conditions[?(@.type=="Established")].status}');
    expect(established).toBe('True');
  });

  it('shows a DistributedKV through the CRD\'s printer columns, by its kind and by its short name', async () => {
    await client.request('POST', resourcePath(API_VERSION, KIND, namespace), {
      body: { apiVersion: API_VERSION, kind: KIND, metadata: { name: 'orders', namespace }, spec: { size: 3, image: 'registry.k8s.io/etcd:3.6.8-0' } },
    });
    const [header, row, ...more] = (await kubectl('get', 'distributedkv', '--namespace', namespace)).trim().split('\n');
    expect(header.split(/\s+/)).toEqual(['NAME', 'SIZE', 'READY', 'STATUS', 'FULL', 'AGE']);
    expect(row.split(/\s+/).slice(0, 2)).toEqual(['orders', '3']);
    expect(more).toEqual([]);
    expect((await kubectl('get', 'dkv', '--namespace', namespace, '--output=name')).trim()).toBe('distributedkv.example.com/orders');
  });
});
