/**
 * Credentials: what a kubeconfig says, read without the weight of the full
 * Kubernetes client, except for exec plugins, which that client runs.
 */
import { existsSync, mkdtempSync, readFileSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { parse, stringify } from 'yaml';
import { credentialSource, loadConnection } from '../../kube/connection.js';
import { KubeApiError, KubeClient } from '../../kube/client.js';
import { createNamespace, describeWithCluster, eventually, testClient } from '../cluster/kube.js';
import { serviceAccountToken } from '../support/connections.js';

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
  it('sends a static token, or a token file, as a bearer token; the file is re-read after its refresh period and after a 401', async () => {
    expect((await loadConnection(kubeconfig({ server: 'https://example.invalid:6443/' }, { token: 's3cret' })).requestOptions()).headers).toEqual({ Authorization: 'Bearer s3cret' });
    writeFileSync(join(dir, 'token'), 'from-file\n');
    const connection = loadConnection(kubeconfig({ server: 'https://example.invalid' }, { tokenFile: 'token' }), { tokenRefreshMs: 60_000 });
    expect(connection.server).toBe('https://example.invalid');
    expect((await connection.requestOptions()).headers).toEqual({ Authorization: 'Bearer from-file' });
    writeFileSync(join(dir, 'token'), 'rotated\n');
    expect((await connection.requestOptions()).headers).toEqual({ Authorization: 'Bearer from-file' });
    connection.unauthorized!();
    expect((await connection.requestOptions()).headers).toEqual({ Authorization: 'Bearer rotated' });

    const eager = loadConnection(kubeconfig({ server: 'https://example.invalid' }, { tokenFile: 'token' }, 'eager'), { tokenRefreshMs: 0 });
    expect((await eager.requestOptions()).headers).toEqual({ Authorization: 'Bearer rotated' });
    writeFileSync(join(dir, 'token'), 'rotated again\n');
    expect((await eager.requestOptions()).headers).toEqual({ Authorization: 'Bearer rotated again' });
  });

  it('merges the files of KUBECONFIG=a:b (one holds the cluster and context, the other the user), skipping missing ones', async () => {
    const a = join(dir, 'a');
    const b = join(dir, 'b');
    writeFileSync(a, stringify({ apiVersion: 'v1', kind: 'Config', 'current-context': 'c', clusters: [{ name: 'k', cluster: { server: 'https://a.invalid' } }], contexts: [{ name: 'c', context: { cluster: 'k', user: 'u' } }], users: [] }));
    writeFileSync(b, stringify({ apiVersion: 'v1', kind: 'Config', users: [{ name: 'u', user: { token: 'from-b' } }] }));
    const previous = process.env.KUBECONFIG;
    process.env.KUBECONFIG = `${a}:${join(dir, 'missing')}:${b}`;
    try {
      const connection = loadConnection();
      expect(connection.server).toBe('https://a.invalid');
      expect((await connection.requestOptions()).headers).toEqual({ Authorization: 'Bearer from-b' });
    } finally {
      process.env.KUBECONFIG = previous;
    }
  });

  describe('chooses credentials as kubectl does, but never falls back to the pod\'s own for a kubeconfig that was named', () => {
    const home = '/home/op';
    const homeConfig = '/home/op/.kube/config';
    const existing = (...paths: string[]) => (p: string) => paths.includes(p);
    it.each([
      ['--kubeconfig that exists', { flag: '/etc/kc' }, existing('/etc/kc'), { kubeconfigs: ['/etc/kc'] }],
      ['the existing files of $KUBECONFIG, in order', { env: '/a:/gone:/b' }, existing('/a', '/b', homeConfig), { kubeconfigs: ['/a', '/b'] }],
      ['~/.kube/config when nothing is named', {}, existing(homeConfig), { kubeconfigs: [homeConfig] }],
      ['the pod\'s service account only when nothing is named or found', {}, existing(), { inCluster: true }],
    ])('uses %s', (_, named, exists, expected) => {
      expect(credentialSource({ home, exists, inCluster: true, ...named })).toEqual(expected);
    });
    it.each([
      ['a missing --kubeconfig', { flag: '/etc/kc' }, '/etc/kc: kubeconfig file does not exist'],
      ['a $KUBECONFIG none of whose files exists', { env: '/a:/b' }, '/a:/b: no kubeconfig found: none of the files $KUBECONFIG names exists'],
    ])('refuses %s, even in a pod', (_, named, message) => {
      expect(() => credentialSource({ home, exists: existing(homeConfig), inCluster: true, ...named })).toThrow(message);
    });
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

  it('uses a rotated service-account token after the refresh period, and at once when the old one is refused', async () => {
    const admin = testClient();
    const namespace = await createNamespace(admin, 'rotate');
    const token = async (account: string): Promise<string> => {
      await admin.request('POST', `/api/v1/namespaces/${namespace}/serviceaccounts`, { body: { apiVersion: 'v1', kind: 'ServiceAccount', metadata: { name: account } } });
      return serviceAccountToken(admin, namespace, account);
    };
    const [first, second] = [await token('first'), await token('second')];
    const whoAmI = async (client: KubeClient): Promise<string> =>
      (await client.request('POST', '/apis/authentication.k8s.io/v1/selfsubjectreviews', { body: { apiVersion: 'authentication.k8s.io/v1', kind: 'SelfSubjectReview' } })).status.userInfo.username;
    const cluster = { server: test.clusters[0].cluster.server, 'certificate-authority-data': test.clusters[0].cluster['certificate-authority-data'] };
    const tokenFile = join(dir, 'sa-token');
    writeFileSync(tokenFile, first);
    const slow = KubeClient.fromKubeconfig(kubeconfig(cluster, { tokenFile }, 'sa-slow'), { tokenRefreshMs: 60_000 });
    const fast = KubeClient.fromKubeconfig(kubeconfig(cluster, { tokenFile }, 'sa-fast'), { tokenRefreshMs: 200 });
    try {
      expect(await whoAmI(slow)).toBe(`system:serviceaccount:${namespace}:first`);
      expect(await whoAmI(fast)).toBe(`system:serviceaccount:${namespace}:first`);
      writeFileSync(tokenFile, second); // what the kubelet does when it rotates a projected token
      await eventually('the fast client to use the rotated token', async () => ((await whoAmI(fast)).endsWith(':second') ? true : undefined));
      expect(await whoAmI(slow)).toBe(`system:serviceaccount:${namespace}:first`);
      // The first token is revoked with its service account: one 401, then the new token at once.
      await admin.request('DELETE', `/api/v1/namespaces/${namespace}/serviceaccounts/first`);
      const refused = await eventually('the revoked token to be refused', async () => {
        const error = await whoAmI(slow).then(() => undefined, (e) => e);
        return error instanceof KubeApiError && error.status === 401 ? error : undefined;
      });
      expect(refused.status).toBe(401);
      expect(await whoAmI(slow)).toBe(`system:serviceaccount:${namespace}:second`);
    } finally {
      slow.close();
      fast.close();
      admin.close();
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
