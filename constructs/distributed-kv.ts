import { Construct } from 'constructs';
import { ApiObject, Chart, JsonPatch } from 'cdk8s';
import { loadDefaultConfig, type GeneratorConfig, type JsonPatchOperation } from '../api/config.js';
import { InputError } from '../api/problem.js';
import { validateDistributedKV } from '../api/validate.js';
import { dottedPath } from '../model/field-path.js';
import { withDesiredHash } from '../model/desired-hash.js';
import type { KubeObject } from '../model/kube-object.js';
import type { DistributedKVSpec } from '../imports/distributedkv.js';
import { engineFor, type MembershipPlan } from '../engines/index.js';
import { KVBackupCronJob } from './backup-cron-job.js';
import { KVMemberConfig } from './member-config.js';
import { clusterIdentity, type ClusterIdentity } from '../model/cluster-identity.js';
import { KVDisruptionBudget } from './disruption-budget.js';
import { hasNetworkPolicy, KVNetworkPolicy } from './network-policy.js';
import { hasPodMonitor, KVPodMonitor } from './pod-monitor.js';
import { KVCertificates } from './certificates.js';
import { KVServices } from './services.js';
import { KVStatefulSet } from './stateful-set.js';
import { needsCertificates, PLAIN, tlsInEffect, type LiveTls, type TlsInEffect } from '../model/tls.js';
import { plainJson, rendersPlainly } from './plain-rendering.js';

export interface DistributedKVProps {
  /** The DistributedKV's metadata.name; every generated name derives from it. */
  readonly name: string;
  /** The validated, defaulted spec. */
  readonly spec: DistributedKVSpec;
  /** Names, labels, ports and patches. */
  readonly config: GeneratorConfig;
  /**
   * The step of a membership change to render (the controller's); by
   * default a new cluster of `spec.size` members, what `dkv synth` writes.
   */
  readonly membership?: MembershipPlan;
  /**
   * `true`: the backup CronJob is suspended, for its cluster's controller
   * stands by for another Kubernetes cluster's, which alone writes backups
   * (fleet mode); `false`: not suspended, said explicitly (the active one).
   * @default unset, what `dkv synth` writes: `suspend` is left out
   */
  readonly backupsSuspended?: boolean;
  /**
   * The size the members' volumes have now, while the controller grows them
   * to `spec.storage.size`: the members' derived quota follows the volumes
   * they have, not the ones they will have (KVStatefulSet).
   * @default spec.storage.size, what `dkv synth` writes
   */
  readonly volumeSizeNow?: string;
  /**
   * The schemes the running members use (the controller reads them from the
   * live StatefulSet): they keep them until the migration between plain
   * HTTP and TLS exists (model/tls.ts).
   * @default none: a new cluster, what `dkv synth` writes; TLS as the spec asks
   */
  readonly liveTls?: LiveTls;
  /**
   * The TLS the controller decided the members run: a step of a running
   * cluster's migration to TLS (engines/etcd/tls-migration.ts). Overrides
   * `liveTls`.
   * @default what the spec and `liveTls` say (model/tls.ts)
   */
  readonly tls?: TlsInEffect;
  /**
   * `true`: no NetworkPolicy, though the spec and the configuration leave it
   * on: the controller withholds it from a cluster that ran without one
   * until its spec says `networkPolicy.enabled: true`
   * (reconciler/day2/network-policy-adoption.ts).
   * @default false, what `dkv synth` writes: the policy is emitted
   */
  readonly networkPolicyWithheld?: boolean;
  /**
   * `true`: no PodMonitor, though the configuration turns monitoring on: the
   * controller withholds it while the Kubernetes cluster serves no
   * PodMonitor kind (the Prometheus Operator's CRDs are not installed).
   * @default false, what `dkv synth` writes: the PodMonitor is emitted
   */
  readonly podMonitorWithheld?: boolean;
}

function toCdk8sPatch(op: JsonPatchOperation): JsonPatch {
  switch (op.op) {
    case 'add': return JsonPatch.add(op.path, op.value);
    case 'remove': return JsonPatch.remove(op.path);
    case 'replace': return JsonPatch.replace(op.path, op.value);
    case 'copy': return JsonPatch.copy(op.from!, op.path);
    case 'move': return JsonPatch.move(op.from!, op.path);
    case 'test': return JsonPatch.test(op.path, op.value);
  }
}

/**
 * Everything a DistributedKV turns into: the StatefulSet of members, the
 * headless and client Services, the PodDisruptionBudget, the NetworkPolicy
 * of the members' ports (unless turned off), the PodMonitor of the members'
 * metrics when monitoring is on, cert-manager's Certificates of the members'
 * and the client certificate with `spec.tls.mode: cert-manager` and, when
 * backups are configured, the backup CronJob. The configuration's per-kind patches
 * are applied last, so they can change anything the constructs decide; then
 * each object gets its desired-hash annotation (the hash of everything
 * else), by which the controller tells an object it would write itself from
 * one that drifted. Compose it in any cdk8s Chart, next to your own objects:
 * it renders exactly what `dkv synth` writes for the same spec.
 *
 * @example
 * const chart = new Chart(app, 'shop', { namespace: 'shop' });
 * DistributedKVCluster.fromDocument(chart, 'orders', {
 *   apiVersion: 'example.com/v1beta1', kind: 'DistributedKV',
 *   metadata: { name: 'orders' },
 *   spec: { size: 3, image: 'registry.k8s.io/etcd:3.6.8-0' },
 * });
 */
export class DistributedKVCluster extends Construct {
  /**
   * A cluster from a DistributedKV document as a user writes it: validated
   * and defaulted exactly as `dkv synth` and the controller do.
   *
   * @param config names, labels, ports and patches. @default the built-in configuration (dkv.config.yaml)
   * @throws InputError listing every problem, each with the construct's path and the field's, when the document is not a valid DistributedKV
   */
  static fromDocument(scope: Construct, id: string, document: unknown, config: GeneratorConfig = loadDefaultConfig()): DistributedKVCluster {
    const result = validateDistributedKV(document, config);
    if (!result.valid) {
      throw new InputError(result.problems.map((p) => ({ file: `DistributedKV ${scope.node.path ? `${scope.node.path}/` : ''}${id}`, path: dottedPath(p.segments), message: p.message })));
    }
    return new DistributedKVCluster(scope, id, { name: result.resource.metadata.name, spec: result.resource.spec, config });
  }

  /** Names and labels shared by every object of the cluster. */
  readonly identity: ClusterIdentity;

  constructor(scope: Construct, id: string, props: DistributedKVProps) {
    super(scope, id);
    const { name, spec, config } = props;
    const membership = props.membership ?? { replicas: spec.size, state: 'new' };
    this.identity = clusterIdentity(name, config);
    const identity = this.identity;
    const engine = engineFor(config.engine);
    // The generic engine's server is the user's own: the generator cannot turn TLS on in it.
    const tls = config.engine === 'etcd' ? props.tls ?? tlsInEffect(spec, props.liveTls) : PLAIN;
    if (engine.memberConfig) new KVMemberConfig(this, 'MemberConfig', { identity, data: engine.memberConfig({ identity, spec, config, membership, tls }) });
    new KVStatefulSet(this, 'StatefulSet', { identity, spec, config, membership, volumeSizeNow: props.volumeSizeNow, tls });
    new KVServices(this, 'Services', { identity, config });
    new KVDisruptionBudget(this, 'DisruptionBudget', { identity });
    if (hasNetworkPolicy(spec, config) && !props.networkPolicyWithheld) new KVNetworkPolicy(this, 'NetworkPolicy', { identity, networkPolicy: spec.networkPolicy, config });
    if (hasPodMonitor(config) && !props.podMonitorWithheld) new KVPodMonitor(this, 'PodMonitor', { identity, monitoring: config.monitoring });
    // cert-manager issues the Secrets the members and the backup runner mount (validation requires the namespace then).
    if (tls.mode === 'cert-manager' && needsCertificates(tls)) new KVCertificates(this, 'Certificates', { identity, namespace: Chart.of(this).namespace ?? 'default', config });
    // While a migration's members still serve plain HTTP to clients, the backup runner uses it: some may not serve TLS yet.
    const backupTls = tls.transition?.plainClients ? { ...tls, client: false } : tls;
    if (spec.backup) new KVBackupCronJob(this, 'Backup', { identity, backup: spec.backup, config, suspended: props.backupsSuspended, tls: backupTls, authenticated: spec.clients !== undefined && tls.client });

    const plainly = rendersPlainly(this);
    for (const child of this.node.findAll()) {
      if (!(child instanceof ApiObject)) continue;
      const patches = (config.patches[child.kind as keyof GeneratorConfig['patches']] ?? []).map(toCdk8sPatch);
      // The last steps of each object's rendering, whichever chart renders it: the L1 objects are made in the
      // constructs above, so these are added to their own rendering rather than by a subclass. The configured
      // patches apply to the object as Kubernetes reads it, after the L1 class has converted its props: patches
      // added to the L1 object itself (addJsonPatch) apply before that conversion, which drops any field the
      // L1 schema lacks and renders a quantity given as a plain string empty.
      const render = plainly ? () => plainJson(child) : child.toJson.bind(child);
      child.toJson = () => withDesiredHash((patches.length > 0 ? JsonPatch.apply(render(), ...patches) : render()) as KubeObject, config.hashAnnotation);
    }
  }
}
