/**
 * A watch on a half-open connection, against a real kube-apiserver behind a
 * loopback proxy that stops forwarding without closing anything (a dead
 * node, a dropped NAT entry): the informer notices the silence, restarts its
 * watch and catches up with what changed meanwhile; while it cannot reach
 * the server at all, /healthz fails and names the silent watch, so the
 * process is restarted instead of leading with a frozen cache.
 *
 * The idle bound is 1.5 s here instead of a little over the watch timeout.
 */
import { silentLogger } from '../../kube/log.js';
import { Controller } from '../../reconciler/core/controller.js';
import { startHealthServer } from '../../reconciler/process/health-server.js';
import type { KubeClient } from '../../kube/client.js';
import { startLoopbackProxy, type LoopbackProxy } from '../cluster/loopback-proxy.js';
import { createNamespace, describeWithCluster, eventually, installCrd, testClient } from '../cluster/kube.js';
import { viaServer } from '../support/connections.js';
import { clusterPath, config, createCluster } from './controller-harness.js';

describeWithCluster('a watch on a half-open connection', () => {
  let admin: KubeClient;
  let proxy: LoopbackProxy;

  beforeAll(async () => {
    admin = testClient();
    await installCrd(admin);
    proxy = await startLoopbackProxy(admin.server);
  });
  afterAll(async () => {
    await proxy?.close();
    admin?.close();
  });

  it('is restarted after its idle bound; /healthz fails while the server stays unreachable and recovers after', async () => {
    const namespace = await createNamespace(admin, 'halfopen');
    const client = viaServer(admin, proxy.url);
    const controller = new Controller({
      client, config, log: silentLogger, namespace,
      watch: { watchIdleTimeoutMs: 1500, initialBackoffMs: 100, maxBackoffMs: 200 },
    });
    const health = await startHealthServer({ host: '127.0.0.1', port: 0, registry: controller.metrics.registry, ready: () => controller.cachesSynced, live: () => controller.watchLiveness() });
    const healthz = async () => {
      const res = await fetch(`http://127.0.0.1:${health.port}/healthz`, { signal: AbortSignal.timeout(2000) });
      return { status: res.status, body: await res.text() };
    };
    const restarts = async (reason: string) => (await controller.metrics.watchRestarts.get()).values.filter((v) => v.labels.reason === reason).reduce((n, v) => n + v.value, 0);
    try {
      await controller.startCaches();
      expect(await healthz()).toEqual({ status: 200, body: 'ok' });

      // Every connection goes half-open, and new ones too: the server is unreachable without any error.
      proxy.freeze();
      proxy.blackhole = true;
      await createCluster(admin, namespace, 'changed-meanwhile', { size: 1, image: 'kv:1' });
      // The informers cross their bound one after another; the DistributedKV watch is among them soon after the first.
      const failing = await eventually('/healthz to fail naming the DistributedKV watch', async () => {
        const answer = await healthz();
        return answer.status === 503 && /DistributedKV watch/.test(answer.body) ? answer : undefined;
      }, 20_000, 100);
      expect(failing.body).toMatch(/DistributedKV watch silent for \d+ s/);
      expect(controller.clusters.get(`${namespace}/changed-meanwhile`)).toBeUndefined();

      // New connections get through again (the old ones stay dead): the watches restart and catch up.
      proxy.blackhole = false;
      await eventually('the cache to catch up with the change made while frozen', async () => (controller.clusters.get(`${namespace}/changed-meanwhile`) ? true : undefined), 20_000, 50);
      await eventually('/healthz to recover', async () => ((await healthz()).status === 200 ? true : undefined), 20_000, 100);
      expect(await restarts('idle')).toBeGreaterThanOrEqual(1);
      // The frozen path was really in the way: the API server itself had the object all along.
      expect((await admin.request('GET', clusterPath(namespace, 'changed-meanwhile'))).metadata.name).toBe('changed-meanwhile');
    } finally {
      await controller.stop();
      await health.close();
      client.close();
    }
  }, 60_000);
});
