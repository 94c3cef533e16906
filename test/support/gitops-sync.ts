/**
 * Plays a GitOps tool with self-heal on (Argo CD's `selfHeal`, Flux's
 * reconcile interval): applies a DistributedKV as Git holds it, server-side,
 * as its own field manager and without `force`, again and again, and
 * records every conflict the API server reports. No component here can play
 * Argo CD or Flux (neither builds from the Go module proxy into a process
 * this harness could run without its own cluster), so this loop does what
 * they do to the object: one server-side apply per sync.
 *
 * Bounded: it stops when told, and a test stops it in its own cleanup.
 */
import { KubeApiError, type KubeClient } from '../../kube/client.js';

export const GITOPS_FIELD_MANAGER = 'argocd-controller';

export class GitOpsSync {
  /** Every refused apply: a conflict is two managers claiming one field. */
  readonly conflicts: string[] = [];
  applies = 0;
  private stopped = false;
  private loop?: Promise<void>;

  constructor(
    private readonly client: KubeClient,
    private git: { apiVersion: string; kind: string; metadata: { name: string; namespace: string }; spec: Record<string, unknown> },
    private readonly periodMs = 500,
  ) {}

  /** A commit: Git now holds `spec`, applied at once (as a webhook-triggered sync would) and then on every period. */
  async commit(spec: Record<string, unknown>): Promise<void> {
    this.git = { ...this.git, spec };
    await this.sync();
  }

  start(): void {
    this.loop = (async () => {
      while (!this.stopped) {
        await this.sync();
        await new Promise((r) => setTimeout(r, this.periodMs));
      }
    })();
  }

  async stop(): Promise<void> {
    this.stopped = true;
    await this.loop;
  }

  private async sync(): Promise<void> {
    try {
      await this.client.apply(this.git, { fieldManager: GITOPS_FIELD_MANAGER });
      this.applies++;
    } catch (e) {
      if (e instanceof KubeApiError && e.status === 409) this.conflicts.push(e.message);
      else throw e;
    }
  }
}
