// Slow: the CRD is deleted and created again and again on a plane of its own, each time until the API server has forgotten the kind (1 to 3 minutes).
/**
 * What `npm run demo` and a user do: apply the install bundle (with the
 * final-backup finalizer policy), wait for the CRD to be Established, and
 * `kubectl apply -f examples/`. Established is not enough: for a few seconds
 * the API server still refuses a DistributedKV (test/support/until-admitted.ts
 * says why). Here that moment is made to happen again and again, on a control
 * plane of this file's own (the CRD is deleted and created each time): the
 * CRD is recreated only once the API server's policy plugin has forgotten the
 * kind, so each apply can meet the race instead of passing by luck. Right
 * after Established the kind is refused (an apply, or the wait's dry run);
 * an apply after untilAdmitted, the wait the demo uses, never is.
 */
import { execFileSync } from 'node:child_process';
import { mkdtempSync, readdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import { parseAllDocuments, stringify } from 'yaml';
import { CRD_NAME } from '../../api/crd.js';
import { packageRoot } from '../../api/package-root.js';
import { KubeClient } from '../../kube/client.js';
import { locateBinaries, startControlPlane, type ControlPlane } from '../cluster/control-plane.js';
import { describeWithCluster, eventually } from '../cluster/kube.js';
import { untilEstablished } from '../support/crds.js';
import { untilAdmitted, type Kubectl } from '../support/until-admitted.js';

const ROUNDS = 20;
/** kube-apiserver's mutating-policy plugin reads /openapi/v3's list this often (patch/typeconverter.go); longer than that after the kind left the list, the plugin has forgotten it. */
const POLICY_PLUGIN_POLL_MS = 5_000;

const root = packageRoot();
const examples = readdirSync(join(root, 'examples')).filter((f) => f.endsWith('.yaml')).map((f) => join(root, 'examples', f));

describeWithCluster('kubectl apply of DistributedKVs as soon as their CRD is Established', () => {
  let plane: ControlPlane;
  let client: KubeClient;
  let dir: string;
  let kubectl: Kubectl;
  let crdFile: string;

  beforeAll(async () => {
    const binDir = locateBinaries(['kubectl']);
    plane = await startControlPlane();
    client = KubeClient.fromKubeconfig(plane.kubeconfigPath);
    dir = mkdtempSync(join(tmpdir(), 'dkv-apply-after-crd-'));
    kubectl = (...args) => execFileSync(join(binDir, 'kubectl'), ['--cache-dir', join(dir, 'kubectl-cache'), ...args], {
      encoding: 'utf8', env: { ...process.env, KUBECONFIG: plane.kubeconfigPath }, stdio: ['ignore', 'pipe', 'pipe'],
    });
    execFileSync(process.execPath, [join(root, 'bin', 'dkv.js'), 'install', '--out', dir, '--finalizer-policy'], { stdio: 'ignore' });
    const bundle = join(dir, 'dkv-install.k8s.yaml');
    crdFile = join(dir, 'crd.yaml');
    writeFileSync(crdFile, stringify(parseAllDocuments(readFileSync(bundle, 'utf8')).map((d) => d.toJS()).find((o) => o?.kind === 'CustomResourceDefinition')));
    kubectl('apply', '--server-side', '-f', bundle);
    const namespaces = new Set(examples.flatMap((f) => parseAllDocuments(readFileSync(f, 'utf8')).map((d) => d.toJS().metadata.namespace as string)));
    for (const namespace of namespaces) kubectl('create', 'namespace', namespace);
  }, 180_000);

  afterAll(async () => {
    client?.close();
    await plane?.stop();
    if (dir) rmSync(dir, { recursive: true, force: true });
  });

  /** Deletes the CRD and its DistributedKVs (the policy's finalizer dropped: no controller runs here), until the policy plugin has forgotten the kind. */
  async function removeCrd(): Promise<void> {
    // Each request is retried: right after the CRD was created again, the API server answers
    // "storage is (re)initializing" (429) until its cache of the new kind is ready.
    const { items } = await eventually('the DistributedKVs to list', () => client.request<{ items: unknown[] }>('GET', '/apis/example.com/v1beta1/distributedkvs'), 30_000, 200);
    for (const cr of items as { metadata: { name: string; namespace: string } }[]) {
      await eventually(`the finalizers of ${cr.metadata.namespace}/${cr.metadata.name} to go`, () => client.request('PATCH', `/apis/example.com/v1beta1/namespaces/${cr.metadata.namespace}/distributedkvs/${cr.metadata.name}`, {
        body: { metadata: { finalizers: null } }, contentType: 'application/merge-patch+json',
      }), 30_000, 200);
    }
    kubectl('delete', 'crd', CRD_NAME, '--timeout=60s');
    await eventually('the kind to leave /openapi/v3', async () => {
      const { paths } = await client.request('GET', '/openapi/v3');
      return Object.hasOwn(paths, 'apis/example.com/v1beta1') ? undefined : true;
    }, 30_000, 100);
    await sleep(POLICY_PLUGIN_POLL_MS + 1_000);
  }

  async function installCrd(): Promise<void> {
    kubectl('apply', '--server-side', '-f', crdFile);
    await untilEstablished(client, CRD_NAME);
  }

  const apply = (): string | undefined => {
    try {
      kubectl('apply', ...examples.flatMap((f) => ['-f', f]));
      return undefined;
    } catch (e) {
      return String((e as { stderr?: string }).stderr ?? e).trim().split('\n')[0];
    }
  };

  it(`is refused right after Established, and never after untilAdmitted (${ROUNDS} rounds, each arming the race again)`, async () => {
    const withoutWait: (string | undefined)[] = [];
    const afterWait: (string | undefined)[] = [];
    const waited: number[] = [];
    for (let round = 0; round < ROUNDS; round++) {
      await removeCrd();
      await installCrd();
      if (round % 2 === 0) {
        withoutWait.push(apply());
      } else {
        waited.push((await untilAdmitted(kubectl, examples)).length);
        afterWait.push(apply());
      }
    }
    process.stderr.write(`apply right after Established: ${withoutWait.filter(Boolean).length}/${withoutWait.length} refused (${[...new Set(withoutWait.filter(Boolean))].join('; ')}); `
      + `after untilAdmitted: ${afterWait.filter(Boolean).length}/${afterWait.length} refused, its dry runs refused ${waited.join(', ')} time(s)\n`);
    // The race is there: right after Established the API server refused the kind, in at least one of the 20 rounds: an
    // apply without the wait failed, as the demo's first run did, or the wait's own dry runs were refused before passing.
    // Either arm counts: how often a round meets the race is the machine's load (the policy plugin polls every 5 s, and a
    // loaded machine takes longer from the CRD's creation to the apply; a busy-core run saw 0 of 10 applies refused and
    // one wait refused 7 times). Every refusal without the wait is one of those the wait retries, never another.
    expect(withoutWait.filter(Boolean).length + waited.filter((n) => n > 0).length).toBeGreaterThan(0);
    for (const refusal of withoutWait.filter(Boolean)) expect(refusal).toMatch(/ServiceUnavailable|resource mapping not found|no matches for kind|storage is \(re\)initializing/);
    // …and the wait is what makes the same apply pass, every time.
    expect(afterWait).toEqual(Array(ROUNDS / 2).fill(undefined));
  }, ROUNDS * 30_000);
});
