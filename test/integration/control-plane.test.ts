/**
 * The API and the generator, proven against a real kube-apiserver: the CRD
 * installs and is served, everything `dkv synth` writes is accepted by a
 * server-side dry-run apply, ajv and the API server agree on which specs are
 * valid, and the status subresource behaves as controllers rely on.
 */
import { loadDefaultConfig } from '../../api/config.js';
import { validateDistributedKV } from '../../api/validate.js';
import { synthesizeCluster } from '../../constructs/synthesize.js';
import { readSpecs } from '../../cli/read-specs.js';
import { EXAMPLE_SPECS } from '../../cli/synth-command.js';
import { KubeClient, resourcePath } from '../../kube/client.js';
import { createNamespace, describeWithCluster, eventually, installCrd, isApiError, testClient } from '../cluster/kube.js';
import { generatedCases, handWrittenCases } from './differential-cases.js';

const config = loadDefaultConfig();

describeWithCluster('the control plane', () => {
  let client: KubeClient;
  let namespace: string;

  beforeAll(async () => {
    client = testClient();
    await installCrd(client);
    namespace = await createNamespace(client, 'cp');
  });
  afterAll(() => client?.close());

  it('serves a truthful version', async () => {
    const version = await client.request('GET', '/version');
    expect(version.gitVersion).toMatch(/^v1\.36\.\d+$/);
  });

  it('installs the CRD as Established and publishes its OpenAPI schema', async () => {
    const crd = await installCrd(client);
    expect(crd.status.acceptedNames.kind).toBe('DistributedKV');
    // The OpenAPI document is rebuilt asynchronously after the CRD is established.
    const schema = await eventually('the DistributedKV OpenAPI v3 schema to be published', async () => {
      const openapi = await client.request('GET', '/openapi/v3/apis/example.com/v1beta1');
      return Object.entries<any>(openapi.components.schemas).find(([name]) => name.endsWith('.DistributedKV'))?.[1];
    });
    expect(schema.properties.spec.properties.size).toMatchObject({ minimum: 1, maximum: 9 });
    expect(schema.properties.spec.required).toEqual(expect.arrayContaining(['size', 'image']));
  });

  it('accepts, in a server-side dry-run apply, every object dkv synth writes for the examples', async () => {
    const { specs, problems } = readSpecs([EXAMPLE_SPECS], config);
    expect(problems).toEqual([]);
    let applied = 0;
    for (const spec of specs) {
      for (const object of synthesizeCluster(spec.resource, config)) {
        const result = await client.apply({ ...object, metadata: { ...object.metadata, namespace } }, { fieldManager: 'dkv-test', dryRun: true });
        expect(result.metadata.name).toBe(object.metadata.name);
        applied++;
      }
    }
    expect(applied).toBeGreaterThanOrEqual(specs.length * 4);
  });

  it('accepts, in a server-side dry-run apply, every object for every size 1-9 with and without backup', async () => {
    for (let size = 1; size <= 9; size++) {
      for (const backup of [undefined, { s3Path: 's3://bucket/kv', schedule: '*/30 * * * *' }]) {
        const result = validateDistributedKV({ apiVersion: 'example.com/v1beta1', kind: 'DistributedKV', metadata: { name: `kv-${size}`, namespace }, spec: { size, image: 'kv:1', backup } }, config);
        if (!result.valid) throw new Error(JSON.stringify(result.problems));
        const objects = synthesizeCluster(result.resource, config);
        // The etcd engine's member ConfigMap, the NetworkPolicy, and the backup CronJob when there is a backup.
        expect(objects.map((o) => o.kind).sort()).toEqual(['ConfigMap', ...(backup ? ['CronJob'] : []), 'NetworkPolicy', 'PodDisruptionBudget', 'Service', 'Service', 'StatefulSet']);
        for (const object of objects) await client.apply(object, { fieldManager: 'dkv-test', dryRun: true });
      }
    }
  });

  it('accepts, in a server-side dry-run apply, the NetworkPolicy with every form of client the spec takes and configured selectors, and stores it as generated', async () => {
    const clients = [
      { podSelector: { matchLabels: { app: 'checkout' } } },
      { namespaceSelector: { matchLabels: { team: 'payments' } } },
      { namespaceSelector: { matchExpressions: [{ key: 'env', operator: 'NotIn', values: ['dev'] }] }, podSelector: { matchExpressions: [{ key: 'tier', operator: 'Exists' }] } },
      { podSelector: {} },
    ];
    const configured = {
      ...config,
      networkPolicy: {
        enabled: true,
        metricsNamespaceSelector: { matchExpressions: [{ key: 'monitoring.example.com/scraper', operator: 'In', values: ['prometheus', 'vmagent'] }] },
        controller: { namespaceSelector: { matchLabels: { 'kubernetes.io/metadata.name': 'ops' } }, podSelector: { matchLabels: { 'app.kubernetes.io/name': 'dkv-controller' } } },
      },
    } as const;
    for (const [spec, cfg] of [[{ networkPolicy: { clients } }, configured], [{ networkPolicy: { clients: [] } }, config], [{}, config]] as const) {
      const result = validateDistributedKV({ apiVersion: 'example.com/v1beta1', kind: 'DistributedKV', metadata: { name: 'kv-np', namespace }, spec: { size: 3, image: 'kv:1', backup: { s3Path: 's3://bucket/kv', schedule: '@daily' }, ...spec } }, cfg);
      if (!result.valid) throw new Error(JSON.stringify(result.problems));
      const policy = synthesizeCluster(result.resource, cfg).find((o) => o.kind === 'NetworkPolicy')!;
      const stored = await client.apply(policy, { fieldManager: 'dkv-test', dryRun: true });
      // Nothing defaulted or dropped that the controller would then read as drift, beyond the server's own metadata.
      expect(stored.spec).toEqual((policy as unknown as { spec: unknown }).spec);
    }
  });

  it('refuses, as the API server does, exactly the label selectors dkv validate refuses in spec.networkPolicy.clients', async () => {
    const keys = ['app', 'example.com/app', 'a.b-c_d', 'x'.repeat(63), 'x'.repeat(64), '', '/app', 'Example.com/app', 'a/b/c', '-a', 'a-', 'example.com/', `${'d'.repeat(254)}/a`, 'ex_ample.com/a'];
    const values = ['', 'v', 'x'.repeat(63), 'x'.repeat(64), 'a b', '-a', 'a.b_c-d', 'a/b'];
    const selectors: unknown[] = [
      ...keys.map((key) => ({ matchLabels: { [key]: 'v' } })),
      ...values.map((value) => ({ matchLabels: { app: value } })),
      ...keys.map((key) => ({ matchExpressions: [{ key, operator: 'Exists' }] })),
      ...values.map((value) => ({ matchExpressions: [{ key: 'app', operator: 'In', values: [value] }] })),
      { matchExpressions: [{ key: 'app', operator: 'In' }] }, { matchExpressions: [{ key: 'app', operator: 'NotIn', values: [] }] },
      { matchExpressions: [{ key: 'app', operator: 'Exists', values: ['a'] }] }, { matchExpressions: [{ key: 'app', operator: 'DoesNotExist', values: ['a'] }] },
      {},
    ];
    const disagreements: string[] = [];
    const verdicts = { accepted: 0, refused: 0 };
    for (const selector of selectors) {
      const local = validateDistributedKV({ apiVersion: 'example.com/v1beta1', kind: 'DistributedKV', metadata: { name: 'kv-sel', namespace }, spec: { size: 3, image: 'kv:1', networkPolicy: { clients: [{ podSelector: selector }] } } }, config);
      let server = true;
      try {
        await client.apply({ apiVersion: 'networking.k8s.io/v1', kind: 'NetworkPolicy', metadata: { name: 'selector-check', namespace }, spec: { podSelector: {}, ingress: [{ from: [{ podSelector: selector }] }] } } as never, { fieldManager: 'dkv-test', dryRun: true });
      } catch (e) {
        if (!(isApiError(e) && e.status === 422)) throw e;
        server = false;
      }
      verdicts[server ? 'accepted' : 'refused']++;
      if (local.valid !== server) disagreements.push(`${JSON.stringify(selector).slice(0, 120)}: dkv ${local.valid ? 'accepts' : 'refuses'}, the API server ${server ? 'accepts' : 'refuses'}`);
    }
    expect(disagreements).toEqual([]);
    // Both verdicts occur, so agreement is not one side accepting everything.
    expect(Math.min(verdicts.accepted, verdicts.refused)).toBeGreaterThanOrEqual(15);
    console.log(`label selectors: ${verdicts.accepted} accepted, ${verdicts.refused} refused by both`);
  });

  describe('differential validation: ajv and the API server give the same verdict', () => {
    /**
     * Differences by design, each named: the API server cannot parse cron, so
     * a range that runs backwards passes its pattern and only the generator
     * rejects it (the controller then reports the spec as Degraded).
     */
    const BACKWARDS_CRON_RANGE = /range .* runs backwards/;

    async function serverVerdict(document: Record<string, any>): Promise<{ accepted: boolean; message: string }> {
      try {
        await client.request('POST', resourcePath('example.com/v1beta1', 'DistributedKV', namespace), {
          query: { dryRun: 'All', fieldValidation: 'Strict' },
          body: { ...document, metadata: { ...document.metadata, namespace } },
        });
        return { accepted: true, message: '' };
      } catch (e) {
        if (isApiError(e) && (e.status === 422 || e.status === 400)) return { accepted: false, message: e.message };
        throw e;
      }
    }

    it('on hand-written edge cases and 300 generated specs', async () => {
      const cases = [...handWrittenCases(), ...generatedCases(300)];
      const mismatches: string[] = [];
      let accepted = 0;
      let rejected = 0;
      for (const document of cases) {
        const local = validateDistributedKV(document, config);
        const server = await serverVerdict(document);
        const localMessages = local.valid ? [] : local.problems.map((p) => p.message);
        if (!local.valid && server.accepted && localMessages.every((m) => BACKWARDS_CRON_RANGE.test(m))) {
          continue; // the named difference below
        }
        if (local.valid !== server.accepted) {
          mismatches.push(`${JSON.stringify(document)}\n  ajv: ${local.valid ? 'accepted' : localMessages.join('; ')}\n  api server: ${server.accepted ? 'accepted' : server.message}`);
        }
        if (server.accepted) accepted++;
        else rejected++;
      }
      expect(mismatches).toEqual([]);
      // The corpus must exercise both verdicts, or agreement proves nothing.
      expect(accepted).toBeGreaterThan(50);
      expect(rejected).toBeGreaterThan(50);
      expect(cases.length).toBeGreaterThanOrEqual(350);
    });

    it('names the by-design difference: a backwards cron range passes the API server and fails the generator', async () => {
      const document = { apiVersion: 'example.com/v1beta1', kind: 'DistributedKV', metadata: { name: 'backwards' }, spec: { size: 3, image: 'kv:1', backup: { s3Path: 's3://b/x', schedule: '5-3 * * * *' } } };
      expect((await serverVerdict(document)).accepted).toBe(true);
      const local = validateDistributedKV(document, config);
      expect(local.valid).toBe(false);
      if (!local.valid) expect(local.problems[0].message).toMatch(BACKWARDS_CRON_RANGE);
    });

    it('names the by-design difference: the server lets storage only grow and keeps its class, which ajv (seeing one version) cannot check', async () => {
      const name = 'growing-storage';
      const path = resourcePath('example.com/v1beta1', 'DistributedKV', namespace, name);
      await client.request('POST', resourcePath('example.com/v1beta1', 'DistributedKV', namespace), { body: { apiVersion: 'example.com/v1beta1', kind: 'DistributedKV', metadata: { name, namespace }, spec: { size: 3, image: 'kv:1', storage: { size: '10Gi' } } } });
      const patch = (storage: Record<string, string>) => client.request('PATCH', path, { body: { spec: { storage } }, contentType: 'application/merge-patch+json' });
      const grown = await patch({ size: '20Gi' });
      expect(grown.spec.storage.size).toBe('20Gi');
      const shrunk = { apiVersion: 'example.com/v1beta1', kind: 'DistributedKV', metadata: { name, namespace }, spec: { size: 3, image: 'kv:1', storage: { size: '5Gi' } } };
      expect(validateDistributedKV(shrunk, config).valid).toBe(true);
      await expect(patch({ size: '5Gi' })).rejects.toThrow(/storage.size can only grow/);
      await expect(patch({ storageClassName: 'fast-ssd' })).rejects.toThrow(/storageClassName cannot change after creation/);
    });
  });

  it('applies the same defaults on the server as the validator', async () => {
    const document = { apiVersion: 'example.com/v1beta1', kind: 'DistributedKV', metadata: { name: 'defaults', namespace }, spec: { size: 1, image: 'kv:1', backup: { s3Path: 's3://b/x', schedule: '@daily' } } };
    const created = await client.request('POST', resourcePath('example.com/v1beta1', 'DistributedKV', namespace), { body: document });
    const local = validateDistributedKV(document, config);
    expect(local.valid).toBe(true);
    if (local.valid) expect(created.spec).toEqual(local.resource.spec);
  });

  it('keeps status apart from spec: a status write leaves metadata.generation alone, a spec write bumps it', async () => {
    const name = 'status-sub';
    const path = resourcePath('example.com/v1beta1', 'DistributedKV', namespace, name);
    const created = await client.request('POST', resourcePath('example.com/v1beta1', 'DistributedKV', namespace), { body: { apiVersion: 'example.com/v1beta1', kind: 'DistributedKV', metadata: { name, namespace }, spec: { size: 3, image: 'kv:1' } } });
    expect(created.metadata.generation).toBe(1);

    const afterStatus = await client.request('PATCH', `${path}/status`, { body: { status: { readyReplicas: 2, observedGeneration: 1 } }, contentType: 'application/merge-patch+json' });
    expect(afterStatus.status.readyReplicas).toBe(2);
    expect(afterStatus.metadata.generation).toBe(1);

    // Status sent to the main resource is ignored: only the subresource writes it.
    const viaMain = await client.request('PATCH', path, { body: { status: { readyReplicas: 9 } }, contentType: 'application/merge-patch+json' });
    expect(viaMain.status.readyReplicas).toBe(2);

    const afterSpec = await client.request('PATCH', path, { body: { spec: { size: 5 } }, contentType: 'application/merge-patch+json' });
    expect(afterSpec.metadata.generation).toBe(2);
    expect(afterSpec.status.readyReplicas).toBe(2);
  });
});
