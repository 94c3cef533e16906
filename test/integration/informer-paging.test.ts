/**
 * An informer over more objects than one page (the API server's lists are
 * asked for 500 at a time): against a real kube-apiserver, 1,200 labelled
 * ConfigMaps all reach the cache through continue tokens, the pages are
 * counted in the server's own request counter, and the watch that follows
 * keeps the cache exact.
 */
import { Informer } from '../../kube/informer.js';
import { resourcePath, type KubeClient } from '../../kube/client.js';
import { requestCounts } from '../cluster/apiserver-metrics.js';
import { createNamespace, describeWithCluster, eventually, testClient } from '../cluster/kube.js';

const OBJECTS = 1200;
const LABEL = 'dkv.example.com/paging-test';

describeWithCluster('an informer over more than one page', () => {
  let client: KubeClient;
  beforeAll(() => {
    client = testClient();
  });
  afterAll(() => client?.close());

  it('caches all 1,200 objects across three pages, and keeps them exact through the watch', async () => {
    const namespace = await createNamespace(client, 'paging');
    const path = resourcePath('v1', 'ConfigMap', namespace);
    // Bounded concurrency: 20 creates in flight at a time.
    for (let start = 0; start < OBJECTS; start += 20) {
      await Promise.all(Array.from({ length: Math.min(20, OBJECTS - start) }, (_, i) => client.request('POST', path, {
        body: { apiVersion: 'v1', kind: 'ConfigMap', metadata: { name: `cm-${start + i}`, labels: { [LABEL]: 'yes' } }, data: { n: String(start + i) } },
      })));
    }
    await client.request('POST', path, { body: { apiVersion: 'v1', kind: 'ConfigMap', metadata: { name: 'unlabelled' } } });

    const listsBefore = (await requestCounts(client)).get('LIST configmaps') ?? 0;
    const informer = new Informer({ client, apiVersion: 'v1', kind: 'ConfigMap', path, labelSelector: `${LABEL}=yes`, onEvent: () => undefined });
    try {
      informer.start();
      await informer.hasSynced();
      expect(informer.size).toBe(OBJECTS);
      expect(new Set(informer.list().map((o) => o.data.n)).size).toBe(OBJECTS);
      expect(((await requestCounts(client)).get('LIST configmaps') ?? 0) - listsBefore).toBe(Math.ceil(OBJECTS / 500));

      await client.request('DELETE', resourcePath('v1', 'ConfigMap', namespace, 'cm-0'));
      await client.request('POST', path, { body: { apiVersion: 'v1', kind: 'ConfigMap', metadata: { name: 'cm-new', labels: { [LABEL]: 'yes' } }, data: { n: 'new' } } });
      await eventually('the watch to bring the delete and the create', async () => (informer.get(`${namespace}/cm-new`) && !informer.get(`${namespace}/cm-0`) ? true : undefined));
      expect(informer.size).toBe(OBJECTS);
    } finally {
      await informer.stop();
    }
  }, 120_000);
});
