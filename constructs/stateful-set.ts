import { Construct } from 'constructs';
import { k8s } from 'cdk8s-plus-27';
import type { DistributedKVSpec } from '../imports/distributedkv.js';
import type { GeneratorConfig } from '../api/config.js';
import type { ClusterIdentity } from '../model/cluster-identity.js';
import { engineFor, type MembershipPlan } from '../engines/index.js';
import { isS3Source } from '../backup/s3-location.js';
import { s3RunnerEnvironment } from './backup-runner.js';
import { memberResources, resourceRequirements, restrictedContainerSecurityContext } from './pod-defaults.js';
import { quantityValue } from '../model/quantity.js';
import type { TlsInEffect } from '../model/tls.js';

export interface KVStatefulSetProps {
  /** Names and labels shared by every object of the cluster. */
  readonly identity: ClusterIdentity;
  /** The validated, defaulted spec. */
  readonly spec: DistributedKVSpec;
  /** The engine, ports and data path of the server. */
  readonly config: GeneratorConfig;
  /** How many members run now, and how they start. */
  readonly membership: MembershipPlan;
  /**
   * The size the members' volumes have now, while they grow to
   * `spec.storage.size` (the controller's): a member's quota is derived from
   * the volume it has, so it rises only once every volume has grown, when
   * the StatefulSet is replaced with the new volume template.
   * @default spec.storage.size
   */
  readonly volumeSizeNow?: string;
  /** The TLS the members run (model/tls.ts). */
  readonly tls: TlsInEffect;
}

/** Name of the volume claim template; part of every member's PVC name, so it never changes. */
export const DATA_VOLUME = 'data';

/**
 * The members of a cluster: one pod per member with a stable identity
 * (`<name>-0`, `<name>-1`, …), a stable DNS name through the headless
 * Service and its own persistent volume that survives rescheduling.
 *
 * Pods start in parallel: members of a peer-to-peer store find each other
 * through the headless Service, and a member waiting for its predecessor to
 * become ready (the default ordered policy) would wait for a quorum that
 * cannot form without it. Pods spread across nodes so that one node's loss
 * costs at most one member where the cluster has room.
 */
export class KVStatefulSet extends Construct {
  readonly apiObject: k8s.KubeStatefulSet;

  constructor(scope: Construct, id: string, props: KVStatefulSetProps) {
    super(scope, id);
    const { identity, spec, config, membership, tls } = props;
    const engine = engineFor(config.engine);
    const member = engine.memberContainer({ identity, spec: asTheVolumesAre(spec, props.volumeSizeNow), config, membership, tls });
    const dataMount = { name: DATA_VOLUME, mountPath: config.dataPath };
    // Validation refuses spec.restore for an engine that cannot restore.
    const restore = spec.restore && engine.restoreContainer?.({ identity, spec, config, membership, tls, from: spec.restore.from });
    // Every member may be the one a lost quorum is rebuilt from (docs/auto-healing.md, "Quorum loss").
    const rebuild = engine.rebuildContainer?.({ identity, spec, config, membership, tls });
    const runner = s3RunnerEnvironment(config);
    this.apiObject = new k8s.KubeStatefulSet(this, 'Resource', {
      metadata: { name: identity.statefulSetName, labels: { ...identity.serverLabels }, annotations: identity.annotations },
      spec: {
        replicas: membership.replicas,
        serviceName: identity.headlessServiceName,
        podManagementPolicy: 'Parallel',
        updateStrategy: { type: engine.updateStrategy ?? 'RollingUpdate' },
        persistentVolumeClaimRetentionPolicy: engine.volumesWhenScaled ? { whenScaled: engine.volumesWhenScaled, whenDeleted: 'Retain' } : undefined,
        selector: { matchLabels: { ...identity.selector } },
        template: {
          metadata: { labels: { ...identity.serverLabels }, annotations: identity.annotations },
          spec: {
            automountServiceAccountToken: false,
            enableServiceLinks: false,
            priorityClassName: config.members.priorityClassName || undefined,
            terminationGracePeriodSeconds: member.terminationGracePeriodSeconds,
            securityContext: {
              runAsNonRoot: true,
              runAsUser: 65532,
              runAsGroup: 65532,
              fsGroup: 65532,
              fsGroupChangePolicy: 'OnRootMismatch',
              seccompProfile: { type: 'RuntimeDefault' },
            },
            topologySpreadConstraints: [
              { maxSkew: 1, topologyKey: 'kubernetes.io/hostname', whenUnsatisfiable: 'DoNotSchedule', labelSelector: { matchLabels: { ...identity.selector } } },
            ],
            initContainers: restore || rebuild ? [
              ...(restore ? [{
                name: 'restore',
                image: config.backup.runner.image,
                command: restore.command,
                args: restore.args,
                env: [...restore.env, ...runner.env],
                envFrom: [...(restore.envFrom ?? []), ...runner.envFrom],
                resources: resourceRequirements(config.restore.resources),
                securityContext: restrictedContainerSecurityContext(),
                volumeMounts: [dataMount],
              }] : []),
              // After a restore: a member restored from a backup is never the recorded member of a recovery.
              ...(rebuild ? [{
                name: 'recover',
                image: config.backup.runner.image,
                command: rebuild.command,
                args: rebuild.args,
                env: rebuild.env,
                envFrom: rebuild.envFrom,
                resources: resourceRequirements(config.restore.resources),
                securityContext: restrictedContainerSecurityContext(),
                volumeMounts: [dataMount],
              }] : []),
            ] : undefined,
            containers: [
              {
                name: 'kv',
                image: spec.image,
                command: member.command,
                args: member.args,
                ports: member.ports,
                env: member.env,
                envFrom: member.envFrom,
                startupProbe: member.startupProbe,
                readinessProbe: member.readinessProbe,
                livenessProbe: member.livenessProbe,
                terminationMessagePolicy: member.terminationMessagePolicy,
                resources: memberResources(spec, config.members.resources),
                securityContext: restrictedContainerSecurityContext(),
                volumeMounts: [dataMount, ...(member.volumeMounts ?? [])],
              },
            ],
            volumes: member.volumes,
          },
        },
        volumeClaimTemplates: [
          {
            metadata: { name: DATA_VOLUME, labels: { ...identity.serverLabels } },
            spec: {
              accessModes: ['ReadWriteOnce'],
              storageClassName: spec.storage?.storageClassName,
              resources: { requests: { storage: k8s.Quantity.fromString(spec.storage?.size ?? '10Gi') } },
              // Restored from a VolumeSnapshot: every member's volume starts as a copy of it (the restore init container makes it the member's own).
              dataSource: restore && spec.restore && !isS3Source(spec.restore.from)
                ? { apiGroup: 'snapshot.storage.k8s.io', kind: 'VolumeSnapshot', name: spec.restore.from }
                : undefined,
            },
          },
        ],
      },
    });
  }
}

/** The spec as the members' volumes are now: the smaller of the spec's size and the volumes' (see volumeSizeNow). */
function asTheVolumesAre(spec: DistributedKVSpec, volumeSizeNow: string | undefined): DistributedKVSpec {
  const wanted = spec.storage?.size ?? '10Gi';
  if (volumeSizeNow === undefined || (quantityValue(volumeSizeNow) ?? Infinity) >= (quantityValue(wanted) ?? 0)) return spec;
  return { ...spec, storage: { ...spec.storage, size: volumeSizeNow } };
}
