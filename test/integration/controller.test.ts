/**
 * The DistributedKV controller against a real kube-apiserver: it creates every
 * generated object owned by the CR, then stays quiet; it restores what someone
 * else changed among the fields it set (and names who), leaves alone what it
 * never set, only reports in detect-only mode, writes only what a spec change
 * touched, prunes what is no longer desired, reports an invalid spec once
 * without retrying hot, cleans up on deletion, and writes nothing over
 * identical objects another tool applied.
 *
 * There is no kube-controller-manager: no pods, no garbage collector, and a
 * StatefulSet's status stays empty. Each test gets its own namespace and its
 * own controller scoped to it.
 */
import { API_VERSION, KIND, validateDistributedKV } from '../../api/validate.js';
import { synthesizeCluster } from '../../constructs/synthesize.js';
import { generatedSelector } from '../../reconciler/core/controller.js';
import { KubeApiError, KubeClient, resourcePath, type RequestOptionsExtra } from '../../kube/client.js';
import { createNamespace, describeWithCluster, eventually, installCrd, isApiError, testClient, untilGone } from '../cluster/kube.js';
import type { GeneratorConfig } from '../../api/config.js';
import { clusterPath, config, converged, createCluster, eventsFor, mutatingRequests, startController, type RunningController } from './controller-harness.js';

const NAME = 'kv';
const HASH = config.hashAnnotation;
const { fieldManager: FIELD_MANAGER, finalizer: LEGACY_FINALIZER, detectOnlyAnnotation: DETECT_ONLY } = config.controller;
const SPEC = { size: 3, image: 'kv:1', backup: { s3Path: 's3://bucket/kv', schedule: '*/30 * * * *', backupImage: 'kv-backup:1' } };
const { backup: _backup, ...WITHOUT_BACKUP } = SPEC;

/** Like examples/orders.yaml, with quantities written the way the API server does not store them. */
const PRODUCTION_SPEC = {
  size: 5,
  image: 'registry.example.com/kv/server:1.4.2',
  storage: { size: '51200Mi', storageClassName: 'fast-ssd' },
  resources: { requests: { cpu: '500m', memory: '1024Mi' }, limits: { cpu: 2, memory: '4Gi' } },
  backup: { s3Path: 's3://acme-kv-backups/shop/orders', schedule: '0 2 * * *', backupImage: 'registry.example.com/kv/backup:1.4.2' },
};

/** What SPEC turns into, by the names in dkv.config.yaml. */
const GENERATED = [
  { apiVersion: 'apps/v1', kind: 'StatefulSet', name: NAME },
  { apiVersion: 'v1', kind: 'Service', name: `${NAME}-peers` },
  { apiVersion: 'v1', kind: 'Service', name: NAME },
  { apiVersion: 'policy/v1', kind: 'PodDisruptionBudget', name: NAME },
  { apiVersion: 'batch/v1', kind: 'CronJob', name: `${NAME}-backup` },
  { apiVersion: 'networking.k8s.io/v1', kind: 'NetworkPolicy', name: NAME },
] as const;
const CRONJOB = GENERATED[4];
const NETWORK_POLICY = GENERATED[5];
const OWNED_KINDS = [...new Map(GENERATED.map((g) => [`${g.apiVersion}/${g.kind}`, g])).values()];

const label = (g: { kind: string; name: string }): string => `${g.kind}/${g.name}`;
/** Whether an event message names the object (`Service/kv` is not named by `Service/kv-peers`). */
const mentions = (message: string, g: { kind: string; name: string }): boolean => {
  const escaped = label(g).replace(/[.*+?^${}()|[\]\\]/g, '\\$&');
  return new RegExp(`(^|[^\\w-])${escaped}(?![\\w-])`).test(message);
};
const objectPath = (namespace: string, g: { apiVersion: string; kind: string; name: string }): string => resourcePath(g.apiVersion, g.kind, namespace, g.name);
const stsPath = (namespace: string): string => resourcePath('apps/v1', 'StatefulSet', namespace, NAME);
const mergePatch = 'application/merge-patch+json';

describeWithCluster('the DistributedKV controller', () => {
  let client: KubeClient;
  let running: RunningController | undefined;

  beforeAll(async () => {
    client = testClient();
    await installCrd(client);
  });
  afterEach(async () => {
    await running?.stop();
    running = undefined;
  });
  afterAll(() => client?.close());

  // ---- helpers ---------------------------------------------------------------------------

  async function startIn(prefix: string): Promise<{ namespace: string; controller: RunningController }> {
    const namespace = await createNamespace(client, prefix);
    running = await startController(client, namespace);
    return { namespace, controller: running };
  }

  /** Sum of a controller metric's samples whose labels include `labels`. */
  async function metric(controller: RunningController, name: string, labels: Record<string, string> = {}): Promise<number> {
    const m = controller.controller.metrics.registry.getSingleMetric(name);
    if (!m) throw new Error(`no metric ${name}`);
    return (await m.get()).values
      .filter((v) => Object.entries(labels).every(([k, x]) => v.labels[k] === x))
      .reduce((sum, v) => sum + v.value, 0);
  }

  /** Every generated-kind object in the namespace, by `Kind/name`. */
  async function liveObjects(namespace: string): Promise<Map<string, any>> {
    const out = new Map<string, any>();
    for (const { apiVersion, kind } of OWNED_KINDS) {
      const list = await client.request('GET', resourcePath(apiVersion, kind, namespace));
      for (const item of list.items) out.set(`${kind}/${item.metadata.name}`, item);
    }
    return out;
  }

  async function resourceVersions(namespace: string): Promise<Record<string, string>> {
    return Object.fromEntries([...(await liveObjects(namespace))].map(([k, o]) => [k, o.metadata.resourceVersion]));
  }

  /**
   * Waits until the controller has nothing left to do: every watch event up to
   * the current state of the namespace has reached its caches (cache and API
   * server agree on every resourceVersion; watch handlers enqueue
   * synchronously), the queue is empty, no reconcile is in flight and none
   * waits for a retry.
   */
  async function settled(controller: RunningController, namespace: string): Promise<void> {
    const c = controller.controller;
    const selector = generatedSelector(config);
    const informers = [
      { path: clusterPath(namespace), selector: undefined, informer: c.clusters },
      ...OWNED_KINDS.map(({ apiVersion, kind }) => ({ path: resourcePath(apiVersion, kind, namespace), selector, informer: c.owned.get(`${apiVersion}/${kind}`)! })),
    ];
    await eventually(`the controller in ${namespace} to be idle with caches current`, async () => {
      for (const { path, selector: labelSelector, informer } of informers) {
        const list = await client.request('GET', path, { query: { labelSelector } });
        const live = new Map<string, string>(list.items.map((o: any) => [`${o.metadata.namespace}/${o.metadata.name}`, o.metadata.resourceVersion]));
        const cached = informer.list().filter((o) => o.metadata.namespace === namespace);
        if (cached.length !== live.size || cached.some((o) => live.get(`${o.metadata.namespace}/${o.metadata.name}`) !== o.metadata.resourceVersion)) return undefined;
      }
      // A failed reconcile waits for its retry with a failure count above zero.
      return c.idle && c.failuresOf(`${namespace}/${NAME}`) === 0 ? true : undefined;
    });
  }

  /** Creates the CR, waits until its status lists every object with a uid, then until the controller is idle. */
  async function createSettled(namespace: string, controller: RunningController, spec: Record<string, unknown> = SPEC, annotations?: Record<string, string>): Promise<any> {
    await createCluster(client, namespace, NAME, spec, annotations);
    await converged(client, namespace, NAME, (spec as { backup?: unknown }).backup ? GENERATED.length : GENERATED.length - 1);
    await settled(controller, namespace);
    return client.request('GET', clusterPath(namespace, NAME));
  }

  async function events(namespace: string, reason: string): Promise<any[]> {
    return (await eventsFor(client, namespace, NAME)).filter((e) => e.reason === reason);
  }

  function degraded(cr: any): any {
    return cr.status?.conditions?.find((c: { type: string }) => c.type === 'Degraded');
  }

  /** Scales the StatefulSet as `kubectl scale` does: a merge patch of the scale subresource. */
  async function scaleAsKubectl(namespace: string, replicas: number): Promise<void> {
    await client.request('PATCH', `${stsPath(namespace)}/scale`, { query: { fieldManager: 'kubectl' }, body: { spec: { replicas } }, contentType: mergePatch });
  }

  /** The generated objects as `dkv synth` writes them, placed in the namespace. */
  function synthesized(namespace: string, spec: Record<string, unknown> = SPEC) {
    const result = validateDistributedKV({ apiVersion: API_VERSION, kind: KIND, metadata: { name: NAME, namespace }, spec }, config);
    if (!result.valid) throw new Error(JSON.stringify(result.problems));
    return synthesizeCluster(result.resource, config);
  }

  /** Waits until the object no longer exists. */
  const gone = (path: string) => untilGone(client, path);

  /** Observes for a bounded window: a measurement, not a wait for a condition. */
  const observeFor = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

  // ---- 1. creation -----------------------------------------------------------------------

  it('creates every generated object owned by the CR, with its desired hash, lists them in status and records Created events', async () => {
    const { namespace, controller } = await startIn('ctl-create');
    const cr = await createSettled(namespace, controller);
    const live = await liveObjects(namespace);

    expect([...live.keys()].sort()).toEqual(GENERATED.map(label).sort());
    const desired = new Map(synthesized(namespace).map((o) => [label({ kind: o.kind, name: o.metadata.name }), o]));
    for (const g of GENERATED) {
      const object = live.get(label(g));
      expect(object.metadata.ownerReferences).toEqual([{ apiVersion: API_VERSION, kind: KIND, name: NAME, uid: cr.metadata.uid, controller: true, blockOwnerDeletion: true }]);
      expect(object.metadata.annotations[HASH]).toBe(desired.get(label(g))!.metadata.annotations![HASH]);
    }

    // Only the final backup's: a deletion of a cluster with backups waits for one (final-backup.test.ts).
    expect(cr.metadata.finalizers ?? []).toEqual([config.backup.final.finalizer]);
    expect([...cr.status.generatedObjects].sort((a: any, b: any) => `${a.kind}/${a.name}`.localeCompare(`${b.kind}/${b.name}`)))
      .toEqual(GENERATED.map((g) => {
        const object = live.get(label(g));
        return { apiVersion: g.apiVersion, kind: g.kind, name: g.name, uid: object.metadata.uid, hash: object.metadata.annotations[HASH] };
      }).sort((a, b) => `${a.kind}/${a.name}`.localeCompare(`${b.kind}/${b.name}`)));
    expect(degraded(cr)).toMatchObject({ status: 'False', reason: 'AsExpected' });
    // A new cluster (the controller created its StatefulSet) gets its NetworkPolicy by default, and status records it.
    expect(cr.status.networkPolicy).toBe('Applied');
    expect(cr.status.conditions.find((c: any) => c.type === 'NetworkPolicy')).toMatchObject({ status: 'True', reason: 'Applied' });

    // One event per object or one for all of them: each object is reported created exactly once.
    const created = await events(namespace, 'Created');
    for (const g of GENERATED) expect(created.filter((e) => mentions(e.message, g))).toHaveLength(1);
    expect(created.every((e) => e.type === 'Normal' && e.source.component === FIELD_MANAGER)).toBe(true);
    expect(await metric(controller, 'dkv_applies_total', { reason: 'created' })).toBe(GENERATED.length);
  });

  // ---- 2. steady state -------------------------------------------------------------------

  it.each([
    ['a minimal spec', SPEC],
    ['a production-shaped spec whose quantities the API server rewrites (1024Mi → 1Gi, 2 → "2")', PRODUCTION_SPEC],
  ])('writes nothing at all over a settled cluster: %s', async (_, spec) => {
    const { namespace, controller } = await startIn('ctl-steady');
    await createSettled(namespace, controller, spec);
    const versionsBefore = await resourceVersions(namespace);
    const crBefore = await client.request('GET', clusterPath(namespace, NAME));
    const appliesBefore = await metric(controller, 'dkv_applies_total');
    const reconcilesBefore = await metric(controller, 'dkv_reconcile_total');
    // The API server's own counter, so a write the controller does not count is still seen.
    // Leases and Events are excluded: kube-apiserver renews its own identity and endpoint
    // Leases on a timer, and Events are reports, not state. The counter is server-wide:
    // this holds because jest runs one test file at a time (maxWorkers: 1 in jest.config.js).
    const mutatingBefore = await mutatingRequests(client);

    await observeFor(5000);

    expect(await mutatingRequests(client)).toBe(mutatingBefore);
    expect(await metric(controller, 'dkv_applies_total')).toBe(appliesBefore);
    expect(await resourceVersions(namespace)).toEqual(versionsBefore);
    expect((await client.request('GET', clusterPath(namespace, NAME))).metadata.resourceVersion).toBe(crBefore.metadata.resourceVersion);
    expect(await metric(controller, 'dkv_reconcile_total', { result: 'error' })).toBe(0);

    // Quiet because nothing needed doing, not because it stopped working: it still answers a change.
    await scaleAsKubectl(namespace, spec.size + 1);
    await eventually(`replicas to be restored to ${spec.size}`, async () => ((await client.request('GET', stsPath(namespace))).spec.replicas === spec.size ? true : undefined));
    await settled(controller, namespace);
    expect(await metric(controller, 'dkv_reconcile_total')).toBeGreaterThan(reconcilesBefore);
  });

  it('does not fight the API server over a field it does not keep (a patched sessionAffinityConfig): one warning, then no writes', async () => {
    const namespace = await createNamespace(client, 'ctl-notkept');
    // The API server drops sessionAffinityConfig from a Service without ClientIP affinity: every
    // comparison would find it "drifted" again, and a naive controller would apply forever.
    const patched: GeneratorConfig = { ...config, patches: { Service: [{ op: 'add', path: '/spec/sessionAffinityConfig', value: { clientIP: { timeoutSeconds: 30 } } }] } };
    running = await startController(client, namespace, { config: patched });
    await createSettled(namespace, running);
    const warnings = await events(namespace, 'FieldsNotKept');
    expect(warnings).toHaveLength(2);
    for (const w of warnings) expect(w.message).toContain('spec.sessionAffinityConfig');

    const mutatingBefore = await mutatingRequests(client);
    const appliesBefore = await metric(running, 'dkv_applies_total');
    await observeFor(3000);
    expect(await mutatingRequests(client)).toBe(mutatingBefore);
    expect(await metric(running, 'dkv_applies_total')).toBe(appliesBefore);
    expect(await events(namespace, 'FieldsNotKept')).toHaveLength(2);
    expect(await events(namespace, 'DriftCorrected')).toHaveLength(0);
  });

  // ---- 3. out-of-band edits --------------------------------------------------------------

  describe('restores out-of-band edits to the fields it set, with one DriftCorrected event naming the field and who changed it', () => {
    async function driftEvents(namespace: string): Promise<any[]> {
      return events(namespace, 'DriftCorrected');
    }

    it('restores a StatefulSet scaled out of band, and names kubectl as the one who changed it', async () => {
      const { namespace, controller } = await startIn('ctl-scale');
      await createSettled(namespace, controller);

      await scaleAsKubectl(namespace, 5);

      await eventually('replicas to be restored to 3', async () => ((await client.request('GET', stsPath(namespace))).spec.replicas === 3 ? true : undefined));
      await settled(controller, namespace);
      const drift = await driftEvents(namespace);
      expect(drift).toHaveLength(1);
      expect(drift[0].type).toBe('Warning');
      expect(drift[0].message).toContain(`StatefulSet/${NAME}`);
      expect(drift[0].message).toContain('spec.replicas');
      expect(drift[0].message).toMatch(/changed by kubectl\b/);
      expect(await metric(controller, 'dkv_drift_total', { kind: 'StatefulSet', field: 'spec.replicas', action: 'corrected' })).toBe(1);
      expect(await metric(controller, 'dkv_applies_total', { reason: 'drift' })).toBe(1);
    });

    it('restores a container image changed with a merge patch, and names kubectl-edit', async () => {
      const { namespace, controller } = await startIn('ctl-image');
      await createSettled(namespace, controller);

      await client.request('PATCH', stsPath(namespace), {
        query: { fieldManager: 'kubectl-edit' },
        body: { spec: { template: { spec: { containers: [{ name: 'kv', image: 'kv:hotfix' }] } } } },
        contentType: 'application/strategic-merge-patch+json',
      });

      await eventually('the image to be restored', async () => ((await client.request('GET', stsPath(namespace))).spec.template.spec.containers[0].image === 'kv:1' ? true : undefined));
      await settled(controller, namespace);
      const drift = await driftEvents(namespace);
      expect(drift).toHaveLength(1);
      expect(drift[0].message).toContain('spec.template.spec.containers[kv].image');
      expect(drift[0].message).toContain('kubectl-edit');
    });

    it('recreates a deleted headless Service and says which object it restored', async () => {
      const { namespace, controller } = await startIn('ctl-svc');
      await createSettled(namespace, controller);
      const headless = GENERATED[1];
      const before = await client.request('GET', objectPath(namespace, headless));

      await client.request('DELETE', objectPath(namespace, headless));

      const recreated = await eventually('the headless Service to be recreated', async () => {
        const svc = await client.request('GET', objectPath(namespace, headless));
        return svc.metadata.uid !== before.metadata.uid ? svc : undefined;
      });
      expect(recreated.spec.clusterIP).toBe('None');
      expect(recreated.metadata.ownerReferences?.[0]?.controller).toBe(true);
      await settled(controller, namespace);
      const drift = await driftEvents(namespace);
      expect(drift).toHaveLength(1);
      expect(drift[0].message).toContain(`Service/${headless.name}`);
      // The status follows the new object.
      const cr = await client.request('GET', clusterPath(namespace, NAME));
      expect(cr.status.generatedObjects.find((g: any) => g.kind === 'Service' && g.name === headless.name).uid).toBe(recreated.metadata.uid);
    });

    it('restores a PodDisruptionBudget whose maxUnavailable was edited', async () => {
      const { namespace, controller } = await startIn('ctl-pdb');
      await createSettled(namespace, controller);
      const pdb = GENERATED[3];
      expect((await client.request('GET', objectPath(namespace, pdb))).spec.maxUnavailable).toBe(1);

      await client.request('PATCH', objectPath(namespace, pdb), { query: { fieldManager: 'kubectl-edit' }, body: { spec: { maxUnavailable: 3 } }, contentType: mergePatch });

      await eventually('maxUnavailable to be restored to 1', async () => ((await client.request('GET', objectPath(namespace, pdb))).spec.maxUnavailable === 1 ? true : undefined));
      await settled(controller, namespace);
      const drift = await driftEvents(namespace);
      expect(drift).toHaveLength(1);
      expect(drift[0].message).toContain(`PodDisruptionBudget/${pdb.name}`);
      expect(drift[0].message).toContain('spec.maxUnavailable');
      expect(drift[0].message).toContain('kubectl-edit');
    });

    it('restores a NetworkPolicy whose peer port was opened to every pod, and names who opened it', async () => {
      const { namespace, controller } = await startIn('ctl-netpol');
      await createSettled(namespace, controller);
      const before = await client.request('GET', objectPath(namespace, NETWORK_POLICY));
      const peerRule = before.spec.ingress.findIndex((r: any) => r.ports[0].port === config.ports.peer);
      expect(before.spec.ingress[peerRule].from).toEqual([{ podSelector: { matchLabels: before.spec.podSelector.matchLabels } }]);

      const opened = structuredClone(before.spec.ingress);
      opened[peerRule].from = [{ namespaceSelector: {} }];
      await client.request('PATCH', objectPath(namespace, NETWORK_POLICY), { query: { fieldManager: 'kubectl-edit' }, body: { spec: { ingress: opened } }, contentType: mergePatch });

      await eventually('the peer port closed again to all but the members', async () => {
        const policy = await client.request('GET', objectPath(namespace, NETWORK_POLICY));
        return JSON.stringify(policy.spec.ingress) === JSON.stringify(before.spec.ingress) ? true : undefined;
      });
      await settled(controller, namespace);
      const drift = await driftEvents(namespace);
      expect(drift).toHaveLength(1);
      expect(drift[0].message).toContain(`NetworkPolicy/${NETWORK_POLICY.name}`);
      expect(drift[0].message).toContain('spec.ingress');
      expect(drift[0].message).toContain('kubectl-edit');
    });

    it('recreates a deleted NetworkPolicy, and prunes it when the spec turns it off', async () => {
      const { namespace, controller } = await startIn('ctl-netpol-del');
      await createSettled(namespace, controller);
      const before = await client.request('GET', objectPath(namespace, NETWORK_POLICY));
      await client.request('DELETE', objectPath(namespace, NETWORK_POLICY));
      const recreated = await eventually('the NetworkPolicy recreated', async () => {
        try {
          const policy = await client.request('GET', objectPath(namespace, NETWORK_POLICY));
          return policy.metadata.uid !== before.metadata.uid ? policy : undefined;
        } catch (e) {
          if (isApiError(e, 404)) return undefined;
          throw e;
        }
      });
      expect(recreated.spec).toEqual(before.spec);
      expect(recreated.metadata.ownerReferences?.[0]?.controller).toBe(true);
      await settled(controller, namespace);
      // A policy the controller applied is repaired, not withheld, though the cluster's StatefulSet runs.
      expect((await client.request('GET', clusterPath(namespace, NAME))).status.networkPolicy).toBe('Applied');
      const drift = await driftEvents(namespace);
      expect(drift).toHaveLength(1);
      expect(drift[0].message).toContain(`NetworkPolicy/${NETWORK_POLICY.name}`);

      await client.request('PATCH', clusterPath(namespace, NAME), { body: { spec: { networkPolicy: { enabled: false } } }, contentType: mergePatch });
      await gone(objectPath(namespace, NETWORK_POLICY));
      const cr = await converged(client, namespace, NAME, GENERATED.length - 1);
      expect(cr.status.generatedObjects.map((g: any) => g.kind)).not.toContain('NetworkPolicy');
      await settled(controller, namespace);
      const pruned = await events(namespace, 'Pruned');
      expect(pruned).toHaveLength(1);
      expect(GENERATED.filter((g) => mentions(pruned[0].message, g))).toEqual([NETWORK_POLICY]);
    });

    it('starts a new cluster\'s members only after its NetworkPolicy exists, so a first reconcile cut short in between still ends with the policy applied', async () => {
      // The first write of the policy fails (a lost Lease or a dropped connection cuts it), as in a CI run of
      // leadership-fencing.test.ts: the StatefulSet, written beside it, used to be created anyway, and the next
      // reconcile took the cluster for one that ran without a policy before and withheld it for good.
      class FirstPolicyWriteFails extends KubeClient {
        readonly writes: string[] = [];
        private failedOnce = false;
        override async request<T = any>(method: string, path: string, options: RequestOptionsExtra = {}): Promise<T> {
          if (method === 'PATCH' && /\/(networkpolicies|statefulsets)\/[^/]+$/.test(path)) {
            const kind = path.includes('/networkpolicies/') ? 'NetworkPolicy' : 'StatefulSet';
            if (kind === 'NetworkPolicy' && !this.failedOnce) {
              this.failedOnce = true;
              this.writes.push(`${kind} failed`);
              throw new KubeApiError(503, 'ServiceUnavailable', 'the connection was cut', undefined);
            }
            const result = await super.request<T>(method, path, options);
            this.writes.push(kind);
            return result;
          }
          return super.request<T>(method, path, options);
        }
      }
      const namespace = await createNamespace(client, 'ctl-netpol-first');
      const flaky = new FirstPolicyWriteFails(client.connection);
      running = await startController(flaky, namespace);
      try {
        await createCluster(client, namespace, NAME, SPEC);
        const cr = await converged(client, namespace, NAME, GENERATED.length);
        expect(cr.status.networkPolicy).toBe('Applied');
        expect((await liveObjects(namespace)).has(label(NETWORK_POLICY))).toBe(true);
        expect(flaky.writes.slice(0, 3)).toEqual(['NetworkPolicy failed', 'NetworkPolicy', 'StatefulSet']);
      } finally {
        await running.stop();
        running = undefined;
        flaky.close();
      }
    });

    it('keeps a cluster whose members ran without a NetworkPolicy running without one, across a restart, until its spec enables it', async () => {
      // The cluster as an earlier controller version left it: its CR and its objects (owned by it, by the controller's
      // field manager), no NetworkPolicy. Only then does this controller start.
      const namespace = await createNamespace(client, 'ctl-netpol-up');
      const created = await createCluster(client, namespace, NAME, SPEC);
      const ownerReferences = [{ apiVersion: API_VERSION, kind: KIND, name: NAME, uid: created.metadata.uid, controller: true, blockOwnerDeletion: true }];
      for (const object of synthesized(namespace).filter((o) => o.kind !== 'NetworkPolicy')) {
        await client.apply({ ...object, metadata: { ...object.metadata, ownerReferences } }, { fieldManager: FIELD_MANAGER });
      }
      running = await startController(client, namespace);
      const withheld = await converged(client, namespace, NAME, GENERATED.length - 1);
      await settled(running, namespace);
      const cr = await client.request('GET', clusterPath(namespace, NAME));
      expect(withheld.status.generatedObjects.map((g: any) => g.kind)).not.toContain('NetworkPolicy');
      expect(cr.status.networkPolicy).toBe('Withheld');
      const condition = cr.status.conditions.find((c: any) => c.type === 'NetworkPolicy');
      expect(condition).toMatchObject({ status: 'False', reason: 'Withheld' });
      expect(condition.message).toContain('spec.networkPolicy.clients');
      expect(condition.message).toContain('spec.networkPolicy.enabled: true');
      expect((await liveObjects(namespace)).has(label(NETWORK_POLICY))).toBe(false);
      // Its objects as this version labels them (the shard bucket) are updated, but nothing is created.
      expect(await metric(running, 'dkv_applies_total', { reason: 'created' })).toBe(0);
      const warned = await events(namespace, 'NetworkPolicyWithheld');
      expect(warned).toHaveLength(1);
      expect(warned[0]).toMatchObject({ type: 'Warning', message: condition.message });

      // A restarted controller reads the decision from status: still none, and no second Event.
      await running.stop();
      running = await startController(client, namespace);
      await settled(running, namespace);
      expect((await liveObjects(namespace)).has(label(NETWORK_POLICY))).toBe(false);
      expect((await client.request('GET', clusterPath(namespace, NAME))).status.networkPolicy).toBe('Withheld');
      expect(await events(namespace, 'NetworkPolicyWithheld')).toHaveLength(1);

      // The user lists the other namespaces' clients and enables it: applied, and kept once the field is removed again.
      await client.request('PATCH', clusterPath(namespace, NAME), { body: { spec: { networkPolicy: { enabled: true, clients: [{ namespaceSelector: { matchLabels: { team: 'payments' } } }] } } }, contentType: mergePatch });
      const enabled = await converged(client, namespace, NAME, GENERATED.length);
      expect(enabled.status.networkPolicy).toBe('Applied');
      expect(enabled.status.conditions.find((c: any) => c.type === 'NetworkPolicy')).toMatchObject({ status: 'True', reason: 'Applied' });
      const policy = await client.request('GET', objectPath(namespace, NETWORK_POLICY));
      expect(policy.metadata.ownerReferences?.[0]?.uid).toBe(created.metadata.uid);
      await client.request('PATCH', clusterPath(namespace, NAME), { body: { spec: { networkPolicy: { enabled: null } } }, contentType: mergePatch });
      const unset = await converged(client, namespace, NAME, GENERATED.length);
      await settled(running, namespace);
      expect(unset.status.networkPolicy).toBe('Applied');
      expect((await client.request('GET', objectPath(namespace, NETWORK_POLICY))).metadata.uid).toBe(policy.metadata.uid);
    });

    it('restores a client Service port whose targetPort was edited, and names kubectl-edit', async () => {
      const { namespace, controller } = await startIn('ctl-port');
      await createSettled(namespace, controller);
      const service = GENERATED[2];
      const before = await client.request('GET', objectPath(namespace, service));
      const port = before.spec.ports.find((p: { name: string }) => p.name === 'client');

      await client.request('PATCH', objectPath(namespace, service), {
        query: { fieldManager: 'kubectl-edit' },
        body: { spec: { ports: [{ port: port.port, protocol: 'TCP', targetPort: 9999 }] } },
        contentType: 'application/strategic-merge-patch+json',
      });

      await eventually('targetPort to be restored', async () => {
        const svc = await client.request('GET', objectPath(namespace, service));
        return JSON.stringify(svc.spec.ports) === JSON.stringify(before.spec.ports) ? true : undefined;
      });
      await settled(controller, namespace);
      const drift = await driftEvents(namespace);
      expect(drift).toHaveLength(1);
      expect(drift[0].message).toContain(`Service/${service.name}`);
      expect(drift[0].message).toContain('spec.ports[client].targetPort');
      expect(drift[0].message).toContain('kubectl-edit');
    });

    it('leaves alone fields it never set (an annotation, spec.minReadySeconds), even while it corrects drift on the same object', async () => {
      const { namespace, controller } = await startIn('ctl-foreign');
      await createSettled(namespace, controller);
      const reconcilesBefore = await metric(controller, 'dkv_reconcile_total', { result: 'success' });
      const appliesBefore = await metric(controller, 'dkv_applies_total');

      await client.request('PATCH', stsPath(namespace), {
        query: { fieldManager: 'payments-team' },
        body: { metadata: { annotations: { team: 'payments' } }, spec: { minReadySeconds: 10 } },
        contentType: mergePatch,
      });

      // The edit reached the controller and it reconciled after it, writing nothing.
      await eventually('a reconcile after the edit', async () => ((await metric(controller, 'dkv_reconcile_total', { result: 'success' })) > reconcilesBefore ? true : undefined));
      await settled(controller, namespace);
      expect(await metric(controller, 'dkv_applies_total')).toBe(appliesBefore);
      expect(await driftEvents(namespace)).toHaveLength(0);
      let sts = await client.request('GET', stsPath(namespace));
      expect(sts.metadata.annotations.team).toBe('payments');
      expect(sts.spec.minReadySeconds).toBe(10);

      // A drift it does correct on the same object keeps the other manager's fields.
      await scaleAsKubectl(namespace, 7);
      await eventually('replicas to be restored to 3', async () => ((await client.request('GET', stsPath(namespace))).spec.replicas === 3 ? true : undefined));
      await settled(controller, namespace);
      sts = await client.request('GET', stsPath(namespace));
      expect(sts.metadata.annotations.team).toBe('payments');
      expect(sts.spec.minReadySeconds).toBe(10);
      const drift = await driftEvents(namespace);
      expect(drift).toHaveLength(1);
      expect(drift[0].message).toContain('spec.replicas');
      expect(drift[0].message).not.toMatch(/minReadySeconds|team/);
    });
  });

  // ---- 4. detect-only --------------------------------------------------------------------

  it('in detect-only mode reports an out-of-band scale as DriftDetected (naming spec.replicas and kubectl) and leaves it in place', async () => {
    const { namespace, controller } = await startIn('ctl-detect');
    // A GitOps tool owns the objects: the controller never creates them in detect-only mode.
    for (const object of synthesized(namespace)) await client.apply(object, { fieldManager: 'argocd' });
    const cr = await createSettled(namespace, controller, SPEC, { [DETECT_ONLY]: 'true' });
    expect(degraded(cr)).toMatchObject({ status: 'False', reason: 'AsExpected' });
    expect(cr.metadata.finalizers ?? []).toEqual([]);
    const versionsBefore = await resourceVersions(namespace);

    await scaleAsKubectl(namespace, 5);

    const reported = await eventually('Degraded=True DriftDetected', async () => {
      const current = await client.request('GET', clusterPath(namespace, NAME));
      return degraded(current)?.reason === 'DriftDetected' ? current : undefined;
    });
    await settled(controller, namespace);
    const condition = degraded(reported);
    expect(condition.status).toBe('True');
    expect(condition.message).toContain(`StatefulSet/${NAME}`);
    expect(condition.message).toContain('spec.replicas');
    expect(condition.message).toMatch(/changed by kubectl\b/);

    const detected = await events(namespace, 'DriftDetected');
    expect(detected).toHaveLength(1);
    expect(detected[0].type).toBe('Warning');
    expect(detected[0].message).toContain('spec.replicas');
    expect(detected[0].message).toContain('kubectl');

    // The edit stands, and nothing else was touched.
    expect((await client.request('GET', stsPath(namespace))).spec.replicas).toBe(5);
    const versionsAfter = await resourceVersions(namespace);
    for (const g of GENERATED.filter((x) => x.kind !== 'StatefulSet')) expect(versionsAfter[label(g)]).toBe(versionsBefore[label(g)]);
    expect(await metric(controller, 'dkv_applies_total')).toBe(0);
    expect(await events(namespace, 'DriftCorrected')).toHaveLength(0);
    expect(await metric(controller, 'dkv_drift_total', { field: 'spec.replicas', action: 'reported' })).toBeGreaterThanOrEqual(1);
  });

  // ---- 5. spec changes and prune ---------------------------------------------------------

  it('on a spec change writes only the objects whose hash changed, and prunes the CronJob when backup is removed', async () => {
    const { namespace, controller } = await startIn('ctl-spec');
    await createSettled(namespace, controller);
    const versionsBefore = await resourceVersions(namespace);

    await client.request('PATCH', clusterPath(namespace, NAME), { body: { spec: { backup: { schedule: '0 3 * * *' } } }, contentType: mergePatch });
    await eventually('the CronJob to carry the new schedule', async () => ((await client.request('GET', objectPath(namespace, CRONJOB))).spec.schedule === '0 3 * * *' ? true : undefined));
    await converged(client, namespace, NAME, GENERATED.length);
    await settled(controller, namespace);

    const versionsAfter = await resourceVersions(namespace);
    for (const g of GENERATED) {
      if (g === CRONJOB) expect(versionsAfter[label(g)]).not.toBe(versionsBefore[label(g)]);
      else expect(versionsAfter[label(g)]).toBe(versionsBefore[label(g)]);
    }
    const updated = await events(namespace, 'Updated');
    expect(updated).toHaveLength(1);
    expect(GENERATED.filter((g) => mentions(updated[0].message, g))).toEqual([CRONJOB]);
    expect(await metric(controller, 'dkv_applies_total', { reason: 'spec-changed' })).toBe(1);

    await client.request('PATCH', clusterPath(namespace, NAME), { body: { spec: { backup: null } }, contentType: mergePatch });
    await eventually('the CronJob to be pruned', async () => {
      try {
        await client.request('GET', objectPath(namespace, CRONJOB));
        return undefined;
      } catch (e) {
        if (isApiError(e, 404)) return true;
        throw e;
      }
    });
    const cr = await converged(client, namespace, NAME, GENERATED.length - 1);
    await settled(controller, namespace);
    expect(cr.status.generatedObjects.map((g: any) => g.kind)).not.toContain('CronJob');
    const pruned = await events(namespace, 'Pruned');
    expect(pruned).toHaveLength(1);
    expect(GENERATED.filter((g) => mentions(pruned[0].message, g))).toEqual([CRONJOB]);
    const versionsPruned = await resourceVersions(namespace);
    for (const g of GENERATED.filter((x) => x !== CRONJOB)) expect(versionsPruned[label(g)]).toBe(versionsBefore[label(g)]);
    expect(versionsPruned[label(CRONJOB)]).toBeUndefined();
  });

  // ---- 6. invalid spec -------------------------------------------------------------------

  it('reports a spec the API server accepts but the generator rejects as Degraded/InvalidSpec, creates nothing and does not retry hot', async () => {
    const { namespace, controller } = await startIn('ctl-invalid');
    await createCluster(client, namespace, NAME, { ...SPEC, backup: { ...SPEC.backup, schedule: '5-3 * * * *' } });

    const cr = await eventually('Degraded=True InvalidSpec', async () => {
      const current = await client.request('GET', clusterPath(namespace, NAME));
      return degraded(current)?.reason === 'InvalidSpec' ? current : undefined;
    });
    await settled(controller, namespace);
    expect(degraded(cr).status).toBe('True');
    expect(degraded(cr).message).toContain('spec.backup.schedule');
    expect(cr.status.observedGeneration).toBe(cr.metadata.generation);
    expect((await liveObjects(namespace)).size).toBe(0);
    expect(cr.metadata.finalizers ?? []).toEqual([]);
    const invalid = await events(namespace, 'InvalidSpec');
    expect(invalid).toHaveLength(1);
    expect(invalid[0].message).toContain('spec.backup.schedule');

    const mutatingBefore = await mutatingRequests(client);
    await observeFor(3000);
    expect(await metric(controller, 'dkv_reconcile_total', { result: 'terminal' })).toBeLessThanOrEqual(2);
    expect(await metric(controller, 'dkv_reconcile_total', { result: 'error' })).toBe(0);
    // Server-wide, excluding Leases and Events (see the steady-state test).
    expect(await mutatingRequests(client)).toBe(mutatingBefore);

    // Fixing the spec brings it back without a restart.
    await client.request('PATCH', clusterPath(namespace, NAME), { body: { spec: { backup: { schedule: '3-5 * * * *' } } }, contentType: mergePatch });
    const fixed = await converged(client, namespace, NAME, GENERATED.length);
    expect(degraded(fixed)).toMatchObject({ status: 'False', reason: 'AsExpected' });
  });

  it('refuses maintenance settings the API server accepts but etcd would not run as meant (a quota above the volume, a window running backwards) as InvalidSpec, naming each field, and creates nothing', async () => {
    const { namespace, controller } = await startIn('ctl-maintenance');
    await createCluster(client, namespace, NAME, { ...SPEC, storage: { size: '4Gi' }, maintenance: { quota: '6Gi', defragmentation: { window: { schedule: '0 5-3 * * *', durationMinutes: 60 } } } });
    const cr = await eventually('Degraded=True InvalidSpec', async () => {
      const current = await client.request('GET', clusterPath(namespace, NAME));
      return degraded(current)?.reason === 'InvalidSpec' ? current : undefined;
    });
    await settled(controller, namespace);
    expect(degraded(cr).message).toContain('spec.maintenance.quota: must be at most storage.size (4Gi)');
    expect(degraded(cr).message).toContain('spec.maintenance.defragmentation.window.schedule: hour range 5-3 runs backwards');
    expect((await liveObjects(namespace)).size).toBe(0);
  });

  it('refuses a network policy client the API server accepts but that is not a valid label selector as InvalidSpec, naming the field, and creates nothing', async () => {
    const { namespace, controller } = await startIn('ctl-netpol-bad');
    await createCluster(client, namespace, NAME, { ...SPEC, networkPolicy: { clients: [{ namespaceSelector: { matchExpressions: [{ key: 'team', operator: 'In' }] } }] } });
    const cr = await eventually('Degraded=True InvalidSpec', async () => {
      const current = await client.request('GET', clusterPath(namespace, NAME));
      return degraded(current)?.reason === 'InvalidSpec' ? current : undefined;
    });
    await settled(controller, namespace);
    expect(degraded(cr).message).toContain('spec.networkPolicy.clients[0].namespaceSelector.matchExpressions[0].values: must hold at least one value with operator In');
    expect((await liveObjects(namespace)).size).toBe(0);
  });

  // ---- 7. deletion -----------------------------------------------------------------------

  // Without backups: a cluster with backups waits for a final backup first (final-backup.test.ts).
  it('leaves a deleted cluster\'s objects to the garbage collector: it deletes nothing itself and, without backups, holds no finalizer', async () => {
    const { namespace, controller } = await startIn('ctl-delete');
    const cr = await createSettled(namespace, controller, WITHOUT_BACKUP);
    const versionsBefore = await resourceVersions(namespace);

    await client.request('DELETE', clusterPath(namespace, NAME));
    await gone(clusterPath(namespace, NAME));
    await settled(controller, namespace);
    // No garbage collector runs here: the objects stay, owned by the deleted uid (status-truth.test.ts shows them collected).
    const live = await liveObjects(namespace);
    expect(await resourceVersions(namespace)).toEqual(versionsBefore);
    for (const object of live.values()) expect(object.metadata.ownerReferences[0].uid).toBe(cr.metadata.uid);
    expect(await metric(controller, 'dkv_applies_total', { reason: 'pruned' })).toBe(0);
  });

  it('counts a cluster deleted while it was being reconciled as done, not as a failure to retry with backoff', async () => {
    const namespace = await createNamespace(client, 'ctl-deleted-midway');
    // The controller's requests go through this client, which deletes the cluster just before the first status write:
    // a user's delete racing a reconcile, made certain.
    let raced = false;
    const racing = Object.create(client, {
      request: {
        value: async (method: string, path: string, options?: object) => {
          if (!raced && method === 'PATCH' && path.endsWith(`/distributedkvs/${NAME}/status`)) {
            raced = true;
            await client.request('DELETE', clusterPath(namespace, NAME));
            await gone(clusterPath(namespace, NAME));
          }
          return client.request(method, path, options);
        },
      },
    }) as KubeClient;
    running = await startController(racing, namespace);
    await createCluster(client, namespace, NAME, WITHOUT_BACKUP);
    await eventually('the status write that found the cluster gone', async () => (raced ? true : undefined));
    await eventually('the controller to be idle', async () => (running!.controller.idle ? true : undefined));
    expect(await metric(running, 'dkv_reconcile_total', { result: 'error' })).toBe(0);
    expect(await metric(running, 'dkv_reconcile_total', { result: 'success' })).toBeGreaterThan(0);
  });

  it('honours --cascade=orphan: deletes nothing, so the garbage collector can orphan the objects', async () => {
    const { namespace, controller } = await startIn('ctl-orphan');
    await createSettled(namespace, controller, WITHOUT_BACKUP);
    const versionsBefore = await resourceVersions(namespace);

    await client.request('DELETE', clusterPath(namespace, NAME), { query: { propagationPolicy: 'Orphan' } });
    // The API server records the choice as the `orphan` finalizer, which only the garbage collector removes.
    const deleting = await eventually('the deletion to be recorded', async () => {
      const current = await client.request('GET', clusterPath(namespace, NAME));
      return current.metadata.deletionTimestamp ? current : undefined;
    });
    expect(deleting.metadata.finalizers).toEqual(['orphan']);
    await settled(controller, namespace);

    expect(await resourceVersions(namespace)).toEqual(versionsBefore);
    expect(await metric(controller, 'dkv_applies_total', { reason: 'pruned' })).toBe(0);
    await client.request('PATCH', clusterPath(namespace, NAME), { body: { metadata: { finalizers: null } }, contentType: mergePatch });
  });

  it('removes the finalizer an earlier version added, so a cluster (or its namespace) is deleted even while no controller runs', async () => {
    const { namespace, controller } = await startIn('ctl-legacy');
    await createCluster(client, namespace, NAME, WITHOUT_BACKUP);
    await client.request('PATCH', clusterPath(namespace, NAME), { body: { metadata: { finalizers: [LEGACY_FINALIZER] } }, contentType: mergePatch });
    await eventually('the earlier version\'s finalizer to be removed', async () => {
      const current = await client.request('GET', clusterPath(namespace, NAME));
      return (current.metadata.finalizers ?? []).length === 0 && current.status?.generatedObjects?.length === GENERATED.length - 1 ? true : undefined;
    });
    await settled(controller, namespace);

    await running!.stop();
    running = undefined;
    await client.request('DELETE', clusterPath(namespace, NAME));
    await gone(clusterPath(namespace, NAME));
  });

  // ---- 8. GitOps coexistence -------------------------------------------------------------

  it('writes nothing to identical objects another tool applied from dkv synth output', async () => {
    const { namespace, controller } = await startIn('ctl-gitops');
    for (const object of synthesized(namespace)) await client.apply(object, { fieldManager: 'argocd' });
    const versionsBefore = await resourceVersions(namespace);
    expect(Object.keys(versionsBefore).sort()).toEqual(GENERATED.map(label).sort());

    const cr = await createSettled(namespace, controller);

    expect(await resourceVersions(namespace)).toEqual(versionsBefore);
    expect(await metric(controller, 'dkv_applies_total')).toBe(0);
    expect(await metric(controller, 'dkv_reconcile_total', { result: 'success' })).toBeGreaterThanOrEqual(1);
    expect(degraded(cr)).toMatchObject({ status: 'False', reason: 'AsExpected' });
    const live = await liveObjects(namespace);
    for (const g of cr.status.generatedObjects) expect(g.uid).toBe(live.get(label(g)).metadata.uid);
    expect(await events(namespace, 'Created')).toHaveLength(0);
    expect(await events(namespace, 'DriftCorrected')).toHaveLength(0);
  });
});
