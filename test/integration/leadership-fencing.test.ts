/**
 * Losing the Lease stops writes at once, against a real kube-apiserver:
 * requests of the lost term that were not yet sent are never sent, and a
 * term regained in the same process begins only after every request of the
 * old one has settled, so old and new workers never write side by side.
 * `dkv controller` itself exits when it loses the Lease, as
 * controller-runtime's managers do.
 */
import { spawn } from 'node:child_process';
import { join } from 'node:path';
import { silentLogger } from '../../kube/log.js';
import { packageRoot } from '../../api/package-root.js';
import { Controller } from '../../reconciler/core/controller.js';
import { KubeClient, resourcePath, type RequestOptionsExtra } from '../../kube/client.js';
import { createNamespace, describeWithCluster, eventually, installCrd, testClient } from '../cluster/kube.js';
import { config, converged, createCluster } from './controller-harness.js';

const SPEC = { size: 3, image: 'kv:1' };
const CLUSTERS = 6;

interface Sent {
  readonly term: AbortSignal | undefined;
  readonly method: string;
  readonly path: string;
  readonly event: 'sent' | 'settled';
}

/**
 * The controller's client on a slow network: each request waits 150 ms
 * before it leaves, so reconciles are in flight when leadership is lost.
 * Every request that really leaves, and when it settles, is logged with the
 * leadership term (the fence's signal) it belongs to.
 */
class SlowRecordingClient extends KubeClient {
  readonly log: Sent[] = [];

  override async request<T = any>(method: string, path: string, options: RequestOptionsExtra = {}): Promise<T> {
    if (options.signal === undefined || method === 'GET') return super.request<T>(method, path, options);
    await new Promise((resolve) => setTimeout(resolve, 150));
    if (options.signal.aborted) return super.request<T>(method, path, options); // refused before it is sent
    this.log.push({ term: options.signal, method, path, event: 'sent' });
    try {
      return await super.request<T>(method, path, options);
    } finally {
      this.log.push({ term: options.signal, method, path, event: 'settled' });
    }
  }
}

describeWithCluster('leadership lost with reconciles in flight', () => {
  let admin: KubeClient;

  beforeAll(async () => {
    admin = testClient();
    await installCrd(admin);
  });
  afterAll(() => admin?.close());

  it('sends nothing more for the lost term, and starts the next term only after the old one\'s requests settled', async () => {
    const namespace = await createNamespace(admin, 'fence');
    const client = new SlowRecordingClient(admin.connection);
    const controller = new Controller({ client, config, log: silentLogger, namespace, workers: 4, backoff: { baseMs: 200, maxMs: 2000 } });
    try {
      await controller.startCaches();
      for (let i = 0; i < CLUSTERS; i++) await createCluster(admin, namespace, `kv-${i}`, SPEC);
      await controller.startWorkers();
      await eventually('writes in flight', async () => (client.log.some((e) => e.event === 'sent') ? true : undefined));

      // The Lease is lost and, at once, won again (a flapping elector).
      const lostAt = client.log.length;
      const stopped = controller.stopWorkers();
      const restarted = controller.startWorkers();
      await Promise.all([stopped, restarted]);

      const afterLoss = client.log.slice(lostAt);
      const oldTerm = client.log[0].term;
      expect(afterLoss.filter((e) => e.term === oldTerm && e.event === 'sent')).toEqual([]);

      // The new term finishes the job, and began writing only once every old request had settled.
      for (let i = 0; i < CLUSTERS; i++) await converged(admin, namespace, `kv-${i}`, 5);
      const terms = [...new Set(client.log.map((e) => e.term))];
      const newTerm = terms[1];
      expect(newTerm).toBeDefined();
      const lastOld = client.log.map((e) => e.term === oldTerm).lastIndexOf(true);
      const firstNew = client.log.findIndex((e) => e.term === newTerm);
      expect(lastOld).toBeLessThan(firstNew);
      expect(terms).toHaveLength(2);
    } finally {
      await controller.stop();
      client.close();
    }
  }, 60_000);

  it('dkv controller exits with code 1 when another holder takes its Lease', async () => {
    const namespace = await createNamespace(admin, 'fence-exit');
    const child = spawn(process.execPath, [
      join(packageRoot(), 'bin', 'dkv.js'), 'controller', '--kubeconfig', process.env.DKV_TEST_KUBECONFIG!, '--namespace', namespace, '--identity', 'fenced',
      '--health-addr', '127.0.0.1:0', '--leader-election-namespace', namespace,
      // The shared control plane's CRD converts through no webhook: test/integration/conversion-webhook.test.ts tests it on its own.
      '--webhook-addr', 'off',
      '--lease-duration-ms', '4000', '--renew-deadline-ms', '3000', '--retry-period-ms', '500',
    ], { stdio: ['ignore', 'ignore', 'inherit'] });
    const exited = new Promise<number | null>((resolve) => child.once('exit', (code) => resolve(code)));
    try {
      const leasePath = resourcePath('coordination.k8s.io/v1', 'Lease', namespace, config.controller.leaseName);
      await eventually('the controller to hold the Lease', async () => ((await admin.request('GET', leasePath)).spec?.holderIdentity === 'fenced' ? true : undefined), 30_000);
      // Taken over as another elector would (a 409 means the holder renewed first: read again and retry).
      await eventually('the Lease to be taken over', async () => {
        const lease = await admin.request('GET', leasePath);
        await admin.request('PUT', leasePath, { body: { ...lease, spec: { ...lease.spec, holderIdentity: 'usurper', renewTime: new Date().toISOString().replace('Z', '000Z') } } });
        return true;
      });
      expect(await exited).toBe(1);
    } finally {
      child.kill('SIGKILL');
    }
  }, 60_000);
});
