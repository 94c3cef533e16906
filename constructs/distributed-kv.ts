import { Construct } from 'constructs';
import { ApiObject, JsonPatch } from 'cdk8s';
import type { GeneratorConfig, JsonPatchOperation } from '../api/config.js';
import type { DistributedKVSpec } from '../imports/distributedkv.js';
import { engineFor, type MembershipPlan } from '../engines/index.js';
import { KVBackupCronJob } from './backup-cron-job.js';
import { KVMemberConfig } from './member-config.js';
import { clusterIdentity, type ClusterIdentity } from '../model/cluster-identity.js';
import { KVDisruptionBudget } from './disruption-budget.js';
import { KVServices } from './services.js';
import { KVStatefulSet } from './stateful-set.js';

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
 * headless and client Services, the PodDisruptionBudget and, when backups
 * are configured, the backup CronJob. The configuration's per-kind patches
 * are applied last, so they can change anything the constructs decide.
 */
export class DistributedKVCluster extends Construct {
  readonly identity: ClusterIdentity;

  constructor(scope: Construct, id: string, props: DistributedKVProps) {
    super(scope, id);
    const { name, spec, config } = props;
    const membership = props.membership ?? { replicas: spec.size, state: 'new' };
    this.identity = clusterIdentity(name, config);
    const identity = this.identity;
    const engine = engineFor(config.engine);
    if (engine.memberConfig) new KVMemberConfig(this, 'MemberConfig', { identity, data: engine.memberConfig({ identity, spec, config, membership }) });
    new KVStatefulSet(this, 'StatefulSet', { identity, spec, config, membership });
    new KVServices(this, 'Services', { identity, config });
    new KVDisruptionBudget(this, 'DisruptionBudget', { identity, size: spec.size });
    if (spec.backup) new KVBackupCronJob(this, 'Backup', { identity, backup: spec.backup, config });

    for (const child of this.node.findAll()) {
      if (!(child instanceof ApiObject)) continue;
      for (const op of config.patches[child.kind as keyof GeneratorConfig['patches']] ?? []) child.addJsonPatch(toCdk8sPatch(op));
    }
  }
}
