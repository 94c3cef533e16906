/**
 * What `dkv controller` runs for API versions, beside the reconciler: on
 * every replica, the conversion webhook with a certificate kept fresh by
 * CertificateRotation (settled at start, then every `refreshMs`, which
 * also picks up another replica's rotation); on the leader, the storage
 * version migration. Failures retry with exponential backoff from seconds
 * and never stop the reconciler: clients of the storage version need
 * neither. A missing namespace for the certificate Secret is said once, with
 * how to run without the webhook, and looked at again only every few minutes.
 */
import type { GeneratorConfig } from '../api/config.js';
import type { Clock, TimerHandle } from '../kube/clock.js';
import type { KubeClient } from '../kube/client.js';
import type { Logger } from '../kube/log.js';
import { CertificateRotation, type RotationStep } from './certificate-rotation.js';
import { withBackoff, type Retry } from './retry-with-backoff.js';
import { migrateStorageVersion, type MigrationResult } from './storage-migration.js';
import { startConversionWebhook, type ConversionWebhook } from './webhook-server.js';

export interface ConversionServiceOptions {
  readonly client: KubeClient;
  readonly config: GeneratorConfig;
  /** The controller's namespace: where the certificate Secret lives. */
  readonly namespace: string;
  readonly host: string;
  readonly port: number;
  readonly clock: Clock;
  readonly log: Logger;
  /** How often the certificate is checked (and another replica's renewal picked up). */
  readonly refreshMs?: number;
  readonly backoff?: { readonly baseMs: number; readonly maxMs: number };
  /** How often a namespace that does not exist is looked for again. @default 300000 (five minutes) */
  readonly missingNamespaceRetryMs?: number;
  readonly observe?: (seconds: number, ok: boolean) => void;
}

export class ConversionService {
  private webhook: ConversionWebhook | undefined;
  private timer: TimerHandle | undefined;
  private stopped = false;
  private readonly rotation: CertificateRotation;
  private readonly backoff: Retry;

  constructor(private readonly options: ConversionServiceOptions) {
    this.rotation = new CertificateRotation(options);
    this.backoff = { baseMs: 2_000, maxMs: 60_000, ...options.backoff, missingNamespaceMs: options.missingNamespaceRetryMs ?? 300_000 };
  }

  /**
   * Settles the certificate, then serves, each retried until it works (a
   * port still held by the previous process, say); resolves once serving,
   * or when stopped first. Never rejects.
   */
  async start(): Promise<void> {
    const { clock, log } = this.options;
    const settled = await withBackoff(clock, this.backoff, () => this.stopped, log, 'conversion webhook certificate', () => this.rotation.settle());
    if (!settled || this.stopped) return;
    const webhook = await withBackoff(clock, this.backoff, () => this.stopped, log, 'conversion webhook listen', () =>
      startConversionWebhook({ host: this.options.host, port: this.options.port, certificate: settled.serving, log, observe: this.options.observe }));
    if (!webhook) return;
    if (this.stopped) {
      await webhook.close();
      return;
    }
    this.webhook = webhook;
    this.scheduleRefresh();
  }

  /** One settle of the certificate (CertificateRotation.settle), then serving what it settled on; returns its steps. */
  async refresh(): Promise<RotationStep[]> {
    const { serving, steps } = await this.rotation.settle();
    this.webhook?.setCertificate(serving);
    return steps;
  }

  private scheduleRefresh(): void {
    if (this.stopped) return;
    this.timer = this.options.clock.after(this.options.refreshMs ?? 60_000, () => {
      void (async () => {
        await withBackoff(this.options.clock, this.backoff, () => this.stopped, this.options.log, 'conversion webhook certificate', () => this.refresh());
        this.scheduleRefresh();
      })();
    }).unref();
  }

  /**
   * The leader's storage version migration, retried until done or `stopped()`
   * (the leadership term ended; the next leader runs it again, which is safe).
   */
  migrate(client: KubeClient, stopped: () => boolean): Promise<MigrationResult | undefined> {
    return withBackoff(this.options.clock, this.backoff, () => this.stopped || stopped(), this.options.log, 'storage version migration', () =>
      migrateStorageVersion({ client, log: this.options.log }));
  }

  async stop(): Promise<void> {
    this.stopped = true;
    this.timer?.cancel();
    await this.webhook?.close();
  }
}
