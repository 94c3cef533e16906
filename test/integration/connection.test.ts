/**
 * Credentials: what a kubeconfig says, read without the weight of the full
 * Kubernetes client, except for exec plugins, which that client runs.
 */
import { existsSync, mkdtempSync, readFileSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { parse, stringify } from 'yaml';
import { loadConnection } from '../../reconciler/connection.js';
import { KubeApiError, KubeClient } from '../../reconciler/kube-client.js';
import { describeWithCluster } from '../cluster/kube.js';

const dir = mkdtempSync(join(tmpdir(), 'dkv-connection-'));

function kubeconfig(cluster: Record<string, unknown>, user: Record<string, unknown>, name = 'kubeconfig'): string {
  const file = join(dir, name);
  writeFileSync(file, stringify({
    apiVersion: 'v1', kind: 'Config', 'current-context': 'c',
    clusters: [{ name: 'k', cluster }], users: [{ name: 'u', user }], contexts: [{ name: 'c', context: { cluster: 'k', user: 'u' } }],
  }));
  return file;
}

describe('a kubeconfig without a cluster to talk to', () => {
  it('sends a static token, or a token file re-read as it rotates, as a bearer token', async () => {
    expect((await loadConnection(kubeconfig({ server: 'https://example.invalid:6443/' }, { token: 's3cret' })).requestOptions()).headers).toEqual({ Authorization: 'Bearer s3cret' });
    writeFileSync(join(dir, 'token'), 'from-file\n');
    const connection = loadConnection(kubeconfig({ server: 'https://example.invalid' }, { tokenFile: 'token' }));
    expect(connection.server).toBe('https://example.invalid');
    expect((await connection.requestOptions()).headers).toEqual({ Authorization: 'Bearer from-file' });
  });

  it('merges several files as kubectl does: the first to name an entry wins', () => {
    const first = kubeconfig({ server: 'https://first.invalid' }, { token: 'a' }, 'first');
    const second = join(dir, 'second');
    writeFileSync(second, stringify({ apiVersion: 'v1', kind: 'Config', 'current-context': 'other', clusters: [{ name: 'k', cluster: { server: 'https://second.invalid' } }], users: [], contexts: [] }));
    const previous = process.env.KUBECONFIG;
    process.env.KUBECONFIG = `${first}:${second}`;
    try {
      expect(loadConnection().server).toBe('https://first.invalid');
    } finally {
      process.env.KUBECONFIG = previous;
    }
  });

  it('says which entry is missing', () => {
    const file = join(dir, 'broken');
    writeFileSync(file, stringify({ 'current-context': 'nope', contexts: [] }));
    expect(() => loadConnection(file)).toThrow('kubeconfig: context "nope" not found');
  });
});

describeWithCluster('a kubeconfig against the real API server', () => {
  const test = parse(readFileSync(process.env.DKV_TEST_KUBECONFIG ?? '/dev/null', 'utf8') || '{}');

  it('reads certificates from files named relative to the kubeconfig', async () => {
    const cluster = test.clusters[0].cluster;
    const user = test.users[0].user;
    writeFileSync(join(dir, 'ca.crt'), Buffer.from(cluster['certificate-authority-data'], 'base64'));
    writeFileSync(join(dir, 'admin.crt'), Buffer.from(user['client-certificate-data'], 'base64'));
    writeFileSync(join(dir, 'admin.key'), Buffer.from(user['client-key-data'], 'base64'));
    const client = KubeClient.fromKubeconfig(kubeconfig({ server: cluster.server, 'certificate-authority': 'ca.crt' }, { 'client-certificate': 'admin.crt', 'client-key': 'admin.key' }, 'files'));
    try {
      const namespaces = await client.request('GET', '/api/v1/namespaces');
      expect(namespaces.items.map((n: { metadata: { name: string } }) => n.metadata.name)).toContain('default');
    } finally {
      client.close();
    }
  });

  it('runs an exec credential plugin through @kubernetes/client-node', async () => {
    const marker = join(dir, 'exec-ran');
    const plugin = join(dir, 'plugin.cjs');
    writeFileSync(plugin, `require('fs').writeFileSync(${JSON.stringify(marker)}, 'yes'); process.stdout.write(JSON.stringify({ apiVersion: 'client.authentication.k8s.io/v1', kind: 'ExecCredential', status: { token: 'from-plugin' } }));`);
    const cluster = test.clusters[0].cluster;
    const client = KubeClient.fromKubeconfig(kubeconfig(cluster, { exec: { apiVersion: 'client.authentication.k8s.io/v1', command: process.execPath, args: [plugin], interactiveMode: 'Never' } }, 'exec'));
    try {
      // The test API server knows no bearer tokens: the plugin's token reaches it and is refused.
      const error = await client.request('GET', '/api/v1/namespaces').catch((e) => e);
      expect(error).toBeInstanceOf(KubeApiError);
      expect((error as KubeApiError).status).toBe(401);
      expect(existsSync(marker)).toBe(true);
    } finally {
      client.close();
    }
  });
});
