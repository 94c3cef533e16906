/**
 * Plays the kubelet's part for the members of one StatefulSet, which no
 * component here can: kwok plays each pod's phases (scheduled, Running,
 * Ready) but runs no container, so this loop runs the member container of
 * every scheduled pod as a real etcd process (test/support/etcd-members.ts)
 * and stops it when its pod goes. As a kubelet does, it reads the pod's
 * ConfigMaps when the container starts, and gives it the volume of the pod's
 * claim: a claim with a new uid (the old one was deleted on scale-in) is a
 * new, empty volume. Init containers run first, in order, each to
 * completion; one that fails is run again after a pause (as the kubelet's
 * restart backoff does) and the member does not start. Polls every 100 ms
 * until stopped.
 *
 * No container engine runs here: every image runs the one etcd binary the
 * test control plane builds, except images `unrunnable` names, which never
 * start (as an image that cannot be pulled).
 *
 * With `secretSyncMs`, the Secret volumes of running pods are swapped for
 * the Secrets' current data that often, as a kubelet's sync does (the
 * atomic writer's swap, etcd-members.ts), with no restart.
 *
 * Readiness: kwok's pod-ready stage reports a pod Ready as soon as it is
 * scheduled, whatever its member does. A test whose outcome rests on
 * readiness (a PodDisruptionBudget counts Ready pods) leaves that stage out
 * and passes `readiness: 'probe'`: this loop then reports each pod's phase
 * and Ready condition itself, from the member's own readiness probe
 * (`/readyz` on its metrics listener, as the generated probe asks), as a
 * kubelet does.
 */
import type { KubeClient } from '../../kube/client.js';
import { KubeApiError } from '../../kube/client.js';
import type { ContainerSpec, InitRun, LocalEtcdCluster } from './etcd-members.js';
import { httpProbe } from './http-probe.js';

/** How long a pod whose init container failed waits before it is tried again. */
const INIT_RETRY_MS = 2000;

/** Holds a pod's object while its member process still runs. */
const CONTAINER_FINALIZER = 'test.dkv.example.com/container';

export class EtcdKubelet {
  /** Running members: pod name → the pod's uid. */
  private readonly running = new Map<string, string>();
  private stopped = false;
  private loop?: Promise<void>;
  readonly errors: string[] = [];
  /** Every init container run, in order, with its pod. */
  readonly initRuns: (InitRun & { pod: string })[] = [];
  /** Pods whose init container failed: not tried again before this time. */
  private readonly initRetryAt = new Map<string, number>();
  /** The pods (by uid) whose init containers all completed: not run again when their member's start is retried. */
  private readonly initialized = new Set<string>();
  /** Pods (by uid) whose init containers failed: how often, as the kubelet counts restarts. */
  private readonly initFailures = new Map<string, number>();
  /** With readiness from the probe: what was last reported for each pod uid. */
  private readonly reportedReady = new Map<string, boolean>();
  /** Held members: the pod uid each ran as when held; a newer pod of that name does not start until released. */
  private readonly held = new Map<string, string | undefined>();

  constructor(
    private readonly client: KubeClient,
    private readonly namespace: string,
    private readonly statefulSet: string,
    private readonly cluster: LocalEtcdCluster,
    private readonly unrunnable: (image: string) => boolean = () => false,
    private readonly options: { readonly readiness?: 'kwok' | 'probe'; readonly secretSyncMs?: number } = {},
  ) {}

  /** When the mounted Secrets were last swapped for their current data (secretSyncMs). */
  private secretsSyncedAt = 0;

  start(): void {
    this.loop = (async () => {
      while (!this.stopped) {
        await this.sync().catch((e: Error) => this.errors.push(e.message));
        // As a kubelet's periodic sync does (about a minute in a real one): running pods' Secret volumes swapped for the current data.
        if (this.options.secretSyncMs !== undefined && Date.now() - this.secretsSyncedAt >= this.options.secretSyncMs) {
          this.secretsSyncedAt = Date.now();
          await this.cluster.refreshSecrets().catch((e: Error) => this.errors.push(e.message));
        }
        await new Promise((r) => setTimeout(r, 100));
      }
    })();
  }

  /** The member's process dies and stays dead (its pod still exists): a node or process failure. */
  async crash(pod: string): Promise<void> {
    await this.cluster.stop(pod);
  }

  /** Starts a crashed member again, with the volume it had. */
  revive(pod: string): void {
    this.running.delete(pod);
  }

  /**
   * A replacement pod of each named member is not started until `release()`
   * (a slow image pull, say): the member stays away for exactly as long as a
   * test needs another operation to meet it away, with no timing involved.
   * The pods running now are unaffected.
   */
  hold(pods: readonly string[]): void {
    for (const pod of pods) this.held.set(pod, this.running.get(pod));
  }

  release(): void {
    this.held.clear();
  }

  async stop(): Promise<void> {
    this.stopped = true;
    await this.loop;
    await this.cluster.stopAll();
  }

  private async sync(): Promise<void> {
    const pods = ((await this.client.request('GET', `/api/v1/namespaces/${this.namespace}/pods`)).items as any[])
      .filter((p) => new RegExp(`^${this.statefulSet}-\\d+$`).test(p.metadata.name));
    const podPath = (name: string) => `/api/v1/namespaces/${this.namespace}/pods/${name}`;
    // A pod being deleted keeps its object until its container has exited, as with a kubelet
    // (kwok alone would delete it at once, while the member still runs): our finalizer holds it.
    for (const pod of pods.filter((p) => p.metadata.deletionTimestamp)) {
      const name = pod.metadata.name as string;
      if (this.running.get(name) === pod.metadata.uid) {
        this.running.delete(name);
        await this.cluster.stop(name);
      }
      if (pod.metadata.finalizers?.includes(CONTAINER_FINALIZER)) {
        await this.client.request('PATCH', podPath(name), { body: { metadata: { finalizers: pod.metadata.finalizers.filter((f: string) => f !== CONTAINER_FINALIZER) } }, contentType: 'application/merge-patch+json' });
      }
    }
    const live = new Map(pods.filter((p) => !p.metadata.deletionTimestamp).map((p) => [p.metadata.name as string, p]));
    for (const [name, uid] of this.running) {
      if (live.get(name)?.metadata.uid !== uid) {
        this.running.delete(name);
        await this.cluster.stop(name);
      }
    }
    for (const [name, pod] of live) {
      if (this.running.has(name) || !pod.spec.nodeName) continue;
      if (this.held.has(name) && this.held.get(name) !== pod.metadata.uid) continue;
      const claim = await this.client.request('GET', `/api/v1/namespaces/${this.namespace}/persistentvolumeclaims/data-${name}`).catch((e) => {
        if (e instanceof KubeApiError && e.status === 404) return undefined;
        throw e;
      });
      // The StatefulSet controller creates the claim first; as a kubelet, wait until its volume is there (Bound) to mount it.
      if (!claim || claim.metadata.deletionTimestamp || claim.status?.phase !== 'Bound') continue;
      if (!pod.metadata.finalizers?.includes(CONTAINER_FINALIZER)) {
        await this.client.request('PATCH', podPath(name), { body: { metadata: { finalizers: [...(pod.metadata.finalizers ?? []), CONTAINER_FINALIZER] } }, contentType: 'application/merge-patch+json' });
      }
      if ((this.initRetryAt.get(name) ?? 0) > Date.now()) continue;
      if (this.unrunnable(pod.spec.containers[0].image)) {
        this.running.set(name, pod.metadata.uid);
        continue;
      }
      let initialized = true;
      for (const init of this.initialized.has(pod.metadata.uid) ? [] : (pod.spec.initContainers ?? []) as ContainerSpec[]) {
        const run = await this.cluster.runInit(name, init, claim.metadata.uid);
        this.initRuns.push({ ...run, pod: name });
        if (run.code !== 0) {
          initialized = false;
          this.initRetryAt.set(name, Date.now() + INIT_RETRY_MS);
          await this.reportInitFailure(pod, init, run);
          break;
        }
      }
      if (!initialized) continue;
      this.initialized.add(pod.metadata.uid);
      if (this.initFailures.has(pod.metadata.uid)) await this.reportInitialized(pod);
      // Running once started: a start that failed (its ConfigMap unreadable while the API server restarts) is
      // tried again on the next pass, as a kubelet retries a container it could not create.
      await this.cluster.startPod(name, pod.spec.containers[0] as ContainerSpec, claim.metadata.uid);
      this.running.set(name, pod.metadata.uid);
    }
    if (this.options.readiness === 'probe') await this.reportReadiness(live);
  }

  /**
   * A failed init container as a kubelet reports it: the pod not initialized, the member container waiting, and
   * the init container's exit with its termination message; with `FallbackToLogsOnError`, its log's last 80 lines
   * or 2,048 bytes, whichever is less (the kubelet's own bounds).
   */
  private async reportInitFailure(pod: any, init: ContainerSpec & { terminationMessagePolicy?: string }, run: InitRun): Promise<void> {
    const failures = (this.initFailures.get(pod.metadata.uid) ?? 0) + 1;
    this.initFailures.set(pod.metadata.uid, failures);
    const message = init.terminationMessagePolicy === 'FallbackToLogsOnError' ? Buffer.from(run.output.split('\n').slice(-81).join('\n')).subarray(-2048).toString('utf8') : '';
    const now = new Date().toISOString();
    const container = pod.spec.containers[0];
    await this.client.request('PATCH', `/api/v1/namespaces/${this.namespace}/pods/${pod.metadata.name}/status`, {
      body: {
        status: {
          conditions: [{ type: 'Initialized', status: 'False', reason: 'ContainersNotInitialized', lastTransitionTime: now }, { type: 'Ready', status: 'False', lastTransitionTime: now }, { type: 'ContainersReady', status: 'False', lastTransitionTime: now }],
          initContainerStatuses: [{
            name: init.name, image: '', imageID: '', ready: false, restartCount: failures - 1,
            state: { waiting: { reason: 'CrashLoopBackOff' } },
            lastState: { terminated: { exitCode: run.code ?? 137, reason: 'Error', finishedAt: now, containerID: `local://${pod.metadata.uid}/${init.name}/${failures}`, message } },
          }],
          containerStatuses: [{ name: container.name, image: container.image, imageID: '', ready: false, started: false, restartCount: 0, state: { waiting: { reason: 'PodInitializing' } } }],
        },
      },
      contentType: 'application/merge-patch+json',
    });
    this.reportedReady.delete(pod.metadata.uid);
  }

  /** A pod whose init containers failed before and now completed: its member container runs (kwok reported it Ready once, before the failure, and does not again). */
  private async reportInitialized(pod: any): Promise<void> {
    this.initFailures.delete(pod.metadata.uid);
    if (this.options.readiness === 'probe') return; // reportReadiness writes it, from the member's probe
    const now = new Date().toISOString();
    const container = pod.spec.containers[0];
    await this.client.request('PATCH', `/api/v1/namespaces/${this.namespace}/pods/${pod.metadata.name}/status`, {
      body: {
        status: {
          phase: 'Running',
          conditions: [{ type: 'Initialized', status: 'True', lastTransitionTime: now }, { type: 'Ready', status: 'True', lastTransitionTime: now }, { type: 'ContainersReady', status: 'True', lastTransitionTime: now }],
          containerStatuses: [{ name: container.name, image: container.image, imageID: '', ready: true, started: true, restartCount: 0, state: { running: { startedAt: now } } }],
        },
      },
      contentType: 'application/merge-patch+json',
    });
  }

  /** Each running member's pod: Running, and Ready exactly while its member's /readyz answers 200; written only on change. */
  private async reportReadiness(live: ReadonlyMap<string, any>): Promise<void> {
    for (const [name, pod] of live) {
      if (this.running.get(name) !== pod.metadata.uid) continue;
      const ready = await httpProbe(`${this.cluster.addressOf(name).metricsUrl}/readyz`, { timeoutMs: 1000 }).then((r) => r.status === 200, () => false);
      if (this.reportedReady.get(pod.metadata.uid) === ready) continue;
      const now = new Date().toISOString();
      const condition = (type: string, status: boolean) => ({ type, status: status ? 'True' : 'False', lastTransitionTime: now });
      const container = pod.spec.containers[0];
      await this.client.request('PATCH', `/api/v1/namespaces/${this.namespace}/pods/${name}/status`, {
        body: {
          status: {
            phase: 'Running',
            conditions: [condition('PodScheduled', true), condition('Initialized', true), condition('ContainersReady', ready), condition('Ready', ready)],
            containerStatuses: [{ name: container.name, image: container.image, imageID: '', ready, started: true, restartCount: 0, state: { running: { startedAt: now } } }],
          },
        },
        contentType: 'application/merge-patch+json',
      });
      this.reportedReady.set(pod.metadata.uid, ready);
    }
  }
}
