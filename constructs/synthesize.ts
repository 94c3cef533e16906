import { App, Chart } from 'cdk8s';
import type { GeneratorConfig, JsonPatchOperation, PatchableKind } from '../api/config.js';
import { InvalidConfigError } from '../api/problem.js';
import type { ValidResource } from '../api/validate.js';
import { DistributedKVCluster } from './distributed-kv.js';
import { renderPlainly } from './plain-rendering.js';
import type { KubeObject } from '../model/kube-object.js';
import type { MembershipPlan } from '../engines/index.js';
import type { LiveTls, TlsInEffect } from '../model/tls.js';

/**
 * A cdk8s Chart holding one DistributedKV, in its namespace. `cdk8s synth`,
 * `dkv synth` and the controller all render through it, so there is one
 * place that knows what a DistributedKV turns into.
 */
export class DistributedKVChart extends Chart {
  constructor(scope: App, id: string, readonly resource: ValidResource, readonly config: GeneratorConfig, membership?: MembershipPlan, options: SynthesisOptions = {}) {
    super(scope, id, { namespace: resource.metadata.namespace, disableResourceNameHashes: true });
    new DistributedKVCluster(this, 'Cluster', { name: resource.metadata.name, spec: resource.spec, config, membership, backupsSuspended: options.backupsSuspended, volumeSizeNow: options.volumeSizeNow, liveTls: options.liveTls, tls: options.tls, networkPolicyWithheld: options.networkPolicyWithheld, podMonitorWithheld: options.podMonitorWithheld });
  }
}

/** What only the controller decides about the objects, beyond the spec and the configuration. */
export interface SynthesisOptions {
  /** Fleet mode: `true` on a standby (backup CronJobs suspended), `false` on the active one; unset outside fleet mode. */
  readonly backupsSuspended?: boolean;
  /** While the members' volumes grow: the size they have now (the live StatefulSet's volume template); see KVStatefulSet. */
  readonly volumeSizeNow?: string;
  /** The schemes the running members use, read from the live StatefulSet: kept unless a migration moves them (model/tls.ts). */
  readonly liveTls?: LiveTls;
  /** The TLS the controller decided the members run (a migration's step, reconciler/day2/tls-migration-step.ts): overrides liveTls. */
  readonly tls?: TlsInEffect;
  /** A cluster that ran without a NetworkPolicy keeps running without one until its spec enables it (reconciler/day2/network-policy-adoption.ts). */
  readonly networkPolicyWithheld?: boolean;
  /** Monitoring is on but the PodMonitor is not written: the Prometheus Operator's CRD is not served (reconciler/day2/pod-monitor-step.ts). */
  readonly podMonitorWithheld?: boolean;
}

function render(resource: ValidResource, config: GeneratorConfig, membership?: MembershipPlan, options?: SynthesisOptions): KubeObject[] {
  // An App of its own for each cluster, which nothing else reaches: its objects render plainly (plain-rendering.ts).
  const app = renderPlainly(new App({ outdir: '.' }));
  return new DistributedKVChart(app, resource.metadata.name, resource, config, membership, options).toJson();
}

/** A configured patch that cannot be applied to one cluster's objects. */
export interface PatchFailure {
  readonly kind: PatchableKind;
  /** Its position in `patches.<kind>`. */
  readonly index: number;
  /** Why, in one line (fast-json-patch's message, without cdk8s' wrapping). */
  readonly cause: string;
}

function firstLine(e: unknown): string {
  const error = e as { cause?: Error; message?: string };
  const message = error.cause?.message ?? String(error.message ?? e);
  // cdk8s wraps the patch library's error as "Failed serializing construct at path ...: <error>".
  return message.split('\n')[0].replace(/^Failed serializing construct at path '[^']*' with name '[^']*': /, '').slice(0, 200);
}

/**
 * The first configured patch that fails to apply to this cluster's objects,
 * found by applying each kind's operations one more at a time; undefined
 * when every patch applies.
 */
export function failingPatch(resource: ValidResource, config: GeneratorConfig): PatchFailure | undefined {
  for (const [kind, ops] of Object.entries(config.patches) as [PatchableKind, readonly JsonPatchOperation[]][]) {
    for (let i = 0; i < ops.length; i++) {
      try {
        render(resource, { ...config, patches: { [kind]: ops.slice(0, i + 1) } });
      } catch (e) {
        return { kind, index: i, cause: firstLine(e) };
      }
    }
  }
  return undefined;
}

/**
 * The desired objects of one DistributedKV, in a stable order, each with its
 * desired-hash annotation. The single synthesis function shared by the CLI
 * and the controller.
 *
 * Throws an InvalidConfigError naming `patches.<Kind>[i]` when a configured
 * patch cannot be applied to this cluster's objects (one the configuration
 * check's probe specs did not catch): the configuration must change, so
 * callers must not retry.
 */
export function synthesizeCluster(resource: ValidResource, config: GeneratorConfig, membership?: MembershipPlan, options?: SynthesisOptions): KubeObject[] {
  try {
    return render(resource, config, membership, options);
  } catch (e) {
    const failure = failingPatch(resource, config);
    if (!failure) throw e;
    const { namespace, name } = resource.metadata;
    const cluster = JSON.stringify(`${namespace ? `${namespace}/` : ''}${name}`);
    throw new InvalidConfigError([
      { file: config.file ?? 'configuration', path: `patches.${failure.kind}[${failure.index}]`, message: `cannot be applied to the generated ${failure.kind} of DistributedKV ${cluster}: ${failure.cause}` },
    ]);
  }
}
