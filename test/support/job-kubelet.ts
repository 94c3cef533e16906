/**
 * Plays the kubelet's part for the pods of Jobs in one namespace, which no
 * component here can: kwok schedules a Job's pod and marks it Running (its
 * `pod-complete` Stage must be left out, see NodesOptions.withoutStages),
 * this loop runs the pod's container as a real process and reports how it
 * ended on the pod's status (Succeeded or Failed, with the exit code), as a
 * kubelet does; the Job controller takes it from there (retries, backoff
 * limit, the Job's Complete or Failed condition).
 *
 * As a kubelet does, it gives the container its environment (values, the
 * pod's own name and namespace, ConfigMaps and Secrets by envFrom). No
 * container engine runs images: `dkv` is this project's compiled CLI, and
 * `extraArgs` plays the cluster DNS's part (members' loopback addresses,
 * since every member listens on 127.0.0.1 on ports of its own). Polls every
 * 200 ms until stopped; at most one container runs at a time.
 */
import { spawn } from 'node:child_process';
import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { packageRoot } from '../../api/package-root.js';
import { KubeApiError, type KubeClient } from '../../kube/client.js';

export interface JobRun {
  readonly pod: string;
  readonly job: string;
  readonly code: number | null;
  readonly output: string;
  readonly startedAt: number;
  readonly finishedAt: number;
}

interface EnvVar { name: string; value?: string; valueFrom?: { fieldRef?: { fieldPath: string } } }
interface EnvFrom { configMapRef?: { name: string; optional?: boolean }; secretRef?: { name: string; optional?: boolean } }

export class JobKubelet {
  readonly runs: JobRun[] = [];
  readonly errors: string[] = [];
  private readonly handled = new Set<string>();
  private stopped = false;
  private loop?: Promise<void>;

  constructor(
    private readonly client: KubeClient,
    private readonly namespace: string,
    private readonly extraArgs: () => string[] = () => [],
  ) {}

  start(): void {
    this.loop = (async () => {
      while (!this.stopped) {
        await this.sync().catch((e: Error) => this.errors.push(e.message));
        await new Promise((r) => setTimeout(r, 200));
      }
    })();
  }

  async stop(): Promise<void> {
    this.stopped = true;
    await this.loop;
  }

  private async sync(): Promise<void> {
    const pods = (await this.client.request('GET', `/api/v1/namespaces/${this.namespace}/pods`)).items as any[];
    for (const pod of pods) {
      const job = (pod.metadata.ownerReferences ?? []).find((r: any) => r.kind === 'Job')?.name as string | undefined;
      if (!job || this.handled.has(pod.metadata.uid) || pod.metadata.deletionTimestamp || pod.status?.phase !== 'Running' || this.stopped) continue;
      this.handled.add(pod.metadata.uid);
      const container = pod.spec.containers[0];
      const startedAt = Date.now();
      const { code, output } = await this.run(pod, container);
      const finishedAt = Date.now();
      this.runs.push({ pod: pod.metadata.name, job, code, output, startedAt, finishedAt });
      const time = (ms: number) => new Date(ms).toISOString().replace(/\.\d+Z$/, 'Z');
      await this.client.request('PATCH', `/api/v1/namespaces/${this.namespace}/pods/${pod.metadata.name}/status`, {
        contentType: 'application/merge-patch+json',
        body: {
          status: {
            phase: code === 0 ? 'Succeeded' : 'Failed',
            conditions: [{ type: 'Ready', status: 'False', reason: 'PodCompleted', lastTransitionTime: time(finishedAt) }],
            containerStatuses: [{
              name: container.name, image: container.image, imageID: '', ready: false, restartCount: 0, started: false,
              state: { terminated: { exitCode: code ?? 137, reason: code === 0 ? 'Completed' : 'Error', startedAt: time(startedAt), finishedAt: time(finishedAt), message: output.slice(-1000) } },
            }],
          },
        },
      });
    }
  }

  private async run(
    pod: any, container: { command?: string[]; args?: string[]; env?: EnvVar[]; envFrom?: EnvFrom[]; volumeMounts?: { name: string; mountPath: string }[] },
  ): Promise<{ code: number | null; output: string }> {
    const env: Record<string, string> = { PATH: process.env.PATH ?? '', HOME: process.env.HOME ?? '' };
    // Secret volumes (the backup runner's client certificate): one file per key in a directory of their own; a variable
    // naming the mount path (DKV_TLS_DIR) names that directory, as the path would inside the container.
    const mounted = new Map<string, string>();
    for (const mount of container.volumeMounts ?? []) {
      const secretName = (pod.spec.volumes ?? []).find((v: any) => v.name === mount.name)?.secret?.secretName as string | undefined;
      if (!secretName) continue;
      const secret = await this.client.request('GET', `/api/v1/namespaces/${this.namespace}/secrets/${secretName}`);
      const dir = mkdtempSync(join(tmpdir(), 'dkv-job-secret-'));
      for (const [k, v] of Object.entries((secret.data ?? {}) as Record<string, string>)) writeFileSync(join(dir, k), Buffer.from(v, 'base64'), { mode: 0o600 });
      mounted.set(mount.mountPath, dir);
    }
    for (const from of container.envFrom ?? []) {
      const ref = from.secretRef ?? from.configMapRef;
      if (!ref) continue;
      const kind = from.secretRef ? 'secrets' : 'configmaps';
      const object = await this.client.request('GET', `/api/v1/namespaces/${this.namespace}/${kind}/${ref.name}`).catch((e) => {
        if (e instanceof KubeApiError && e.status === 404 && ref.optional) return undefined;
        throw e;
      });
      for (const [k, v] of Object.entries((object?.data ?? {}) as Record<string, string>)) env[k] = from.secretRef ? Buffer.from(v, 'base64').toString() : v;
    }
    for (const e of container.env ?? []) {
      const field = e.valueFrom?.fieldRef?.fieldPath;
      env[e.name] = field === 'metadata.namespace' ? pod.metadata.namespace : field === 'metadata.name' ? pod.metadata.name : (e.value ?? '');
      env[e.name] = mounted.get(env[e.name]) ?? env[e.name];
    }
    const [binary, ...args] = [...(container.command ?? []), ...(container.args ?? []), ...this.extraArgs()];
    const [file, argv] = binary === 'dkv' ? [process.execPath, [join(packageRoot(), 'bin', 'dkv.js'), ...args]] : [binary, args];
    return new Promise((resolve) => {
      const child = spawn(file, argv, { env, stdio: ['ignore', 'pipe', 'pipe'] });
      let output = '';
      child.stdout.on('data', (d: Buffer) => (output += d.toString()));
      child.stderr.on('data', (d: Buffer) => (output += d.toString()));
      child.on('error', (e) => resolve({ code: 127, output: e.message }));
      child.on('close', (code) => resolve({ code, output }));
    });
  }
}
