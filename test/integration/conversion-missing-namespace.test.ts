/**
 * `dkv controller` started where the install bundle's namespace does not
 * exist (a newcomer running it from a laptop): the conversion webhook cannot
 * keep its certificate Secret there. It says so once, naming the namespace
 * and how to run without the webhook, and asks the API server again only
 * every few minutes, not every few seconds; once the namespace exists, the
 * webhook comes up by itself. Against a real kube-apiserver of its own (the
 * webhook's certificate rotation patches the CRD's caBundle, which the shared
 * control plane's other tests must not see), counting the refused creates by
 * the API server's own request counter.
 */
import { loadDefaultConfig, type GeneratorConfig } from '../../api/config.js';
import { customResourceDefinition } from '../../api/crd.js';
import { ConversionService } from '../../conversion/conversion-service.js';
import { realClock } from '../../kube/clock.js';
import { KubeClient } from '../../kube/client.js';
import { requestCounts } from '../cluster/apiserver-metrics.js';
import { freePort, startControlPlane, type ControlPlane } from '../cluster/control-plane.js';
import { describeWithCluster, eventually } from '../cluster/kube.js';
import { establishCrd } from '../support/crds.js';
import { recordingLogger, type LogRecord } from '../support/recording-logger.js';

/** Long enough for the former backoff (2 s, doubling) to have asked three times: at 0, 2 and 6 s. */
const WINDOW_MS = 10_000;

const secretCreates = async (client: KubeClient): Promise<number> => (await requestCounts(client)).get('POST secrets') ?? 0;
const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

describeWithCluster('the conversion webhook started where its namespace does not exist', () => {
  let plane: ControlPlane;
  let client: KubeClient;
  let config: GeneratorConfig;
  const services: ConversionService[] = [];

  const startService = (namespace: string, logs: LogRecord[], missingNamespaceRetryMs?: number) => {
    const service = new ConversionService({
      client, config, namespace, host: '127.0.0.1', port: Number(new URL(config.conversion.url!).port), clock: realClock, log: recordingLogger(logs), missingNamespaceRetryMs,
    });
    services.push(service);
    return { service, started: service.start() };
  };

  beforeAll(async () => {
    plane = await startControlPlane();
    client = KubeClient.fromKubeconfig(plane.kubeconfigPath);
    const defaults = loadDefaultConfig();
    config = { ...defaults, conversion: { ...defaults.conversion, url: `https://127.0.0.1:${await freePort()}/convert` } };
    await establishCrd(client, customResourceDefinition(config));
  }, 120_000);

  afterAll(async () => {
    for (const service of services) await service.stop();
    client?.close();
    await plane?.stop();
  });

  it('says once what is missing and how to run without it, and does not ask again within seconds', async () => {
    const logs: LogRecord[] = [];
    const before = await secretCreates(client);
    startService('dkv-system', logs);
    await sleep(WINDOW_MS);
    expect(await secretCreates(client) - before).toBe(1);
    const said = logs.filter((r) => r.level !== 'debug');
    expect(said).toEqual([{
      level: 'error',
      message: 'conversion webhook: namespace "dkv-system" does not exist, so its certificate Secret dkv-system/' + config.conversion.certificateSecret
        + ' cannot be created: apply the install bundle (dkv install) or create the namespace, or run without the conversion webhook: dkv controller --webhook-addr off',
      fields: { namespace: 'dkv-system', retryInMs: 300_000 },
    }]);
  }, WINDOW_MS + 30_000);

  it('comes up by itself once the namespace exists, saying it once however often it looked', async () => {
    const logs: LogRecord[] = [];
    const namespace = 'dkv-later';
    const { started } = startService(namespace, logs, 500);
    await eventually('the missing namespace to be looked at again', async () => (logs.filter((r) => r.level === 'debug').length >= 2 ? true : undefined), 10_000, 100);
    await client.request('POST', '/api/v1/namespaces', { body: { apiVersion: 'v1', kind: 'Namespace', metadata: { name: namespace } } });
    await started; // resolves once the webhook serves
    const secret = await client.request('GET', `/api/v1/namespaces/${namespace}/secrets/${config.conversion.certificateSecret}`);
    expect(Object.keys(secret.data).sort()).toEqual(['ca.crt', 'ca.key', 'tls.crt', 'tls.key']);
    expect(logs.filter((r) => r.level === 'error')).toHaveLength(1);
  }, 60_000);
});
