/**
 * An engine is the store's protocol: how a member is started, probed and
 * stopped. The StatefulSet construct owns everything Kubernetes-shaped
 * (identity, volumes, security, spreading); the engine fills in the one
 * container that runs the store. The configuration's `engine` key picks one.
 */
import type { k8s } from 'cdk8s-plus-27';
import type { GeneratorConfig, EngineName } from '../model/generator-config.js';
import type { ClusterIdentity } from '../model/cluster-identity.js';
import type { DistributedKVSpec } from '../imports/distributedkv.js';
import type { TlsInEffect } from '../model/tls.js';

/**
 * How many members the StatefulSet runs now, and whether they bootstrap a
 * new cluster or join an existing one. `dkv synth` renders a new cluster of
 * `size`; the controller renders each step of a membership change.
 */
export interface MembershipPlan {
  readonly replicas: number;
  readonly state: 'new' | 'existing';
  /**
   * The ordinals whose members make up the cluster a joining member is told
   * of, when not 0..replicas-1: a replaced member added back while another
   * pod has no member (engines/etcd/replacement.ts).
   */
  readonly members?: readonly number[];
}

export interface MemberContainerProps {
  readonly identity: ClusterIdentity;
  /** The validated, defaulted spec. */
  readonly spec: DistributedKVSpec;
  readonly config: GeneratorConfig;
  readonly membership: MembershipPlan;
  /** The TLS the members run (model/tls.ts): a new cluster's from the spec, a running one's as it runs. */
  readonly tls: TlsInEffect;
}

/** The engine's part of the member container; name, image, resources, security and the data mount are the StatefulSet's. */
export interface MemberContainer {
  readonly command?: string[];
  readonly args?: string[];
  readonly env: k8s.EnvVar[];
  readonly envFrom?: k8s.EnvFromSource[];
  readonly ports: k8s.ContainerPort[];
  readonly startupProbe: k8s.Probe;
  readonly readinessProbe: k8s.Probe;
  readonly livenessProbe: k8s.Probe;
  /** Seconds a member gets to stop after SIGTERM. */
  readonly terminationGracePeriodSeconds: number;
  /**
   * `FallbackToLogsOnError` for a store that says why it exited only in its
   * log: the tail of the log becomes the container's termination message,
   * which the controller reads from the pod (member replacement reads etcd's
   * exits on lost data there). @default File (Kubernetes' own)
   */
  readonly terminationMessagePolicy?: 'File' | 'FallbackToLogsOnError';
  /** Volumes of the pod the container mounts beside the data volume (certificate Secrets, read-only). */
  readonly volumes?: k8s.Volume[];
  readonly volumeMounts?: k8s.VolumeMount[];
}

/**
 * How a member of a new cluster restores a backup before it starts: the
 * engine's part of an init container (the StatefulSet gives it the backup
 * runner's image, the data volume, the S3 settings and credentials).
 */
export interface RestoreContainer {
  readonly command: string[];
  readonly args: string[];
  readonly env: k8s.EnvVar[];
  readonly envFrom?: k8s.EnvFromSource[];
}

export interface Engine {
  readonly name: EngineName;
  memberContainer(props: MemberContainerProps): MemberContainer;
  /**
   * The data of the member ConfigMap (`names.memberConfig`), for engines
   * whose members read how to join at start: it changes with the membership
   * while the pod template stays the same, so a membership change restarts
   * no running member. Undefined: no ConfigMap.
   */
  readonly memberConfig?: (props: MemberContainerProps) => Record<string, string>;
  /**
   * What happens to a member's volume when the StatefulSet scales in.
   * `Delete`: a member removed from the membership must never come back
   * with its old data and identity. @default Retain (the StatefulSet's own default)
   */
  readonly volumesWhenScaled?: 'Delete' | 'Retain';
  /**
   * `OnDelete`: a new pod template restarts no pod by itself; the controller
   * restarts members one at a time when the store is healthy (upgrade.ts).
   * @default RollingUpdate (the StatefulSet controller's ordinal order)
   */
  readonly updateStrategy?: 'OnDelete' | 'RollingUpdate';
  /**
   * Why the running members (the images of the live pod template and of
   * each member pod) cannot move to `target` one member at a time, if they
   * cannot: the controller refuses such a change before writing anything.
   */
  readonly imageChangeProblem?: (target: string, running: readonly string[]) => string | undefined;
  /**
   * For engines whose backups `dkv backup` takes and `dkv restore` restores:
   * how a member restores `from` (spec.restore.from). Undefined: the engine
   * has neither, and a spec asking for them is refused.
   */
  readonly restoreContainer?: (props: MemberContainerProps & { readonly from: string }) => RestoreContainer;
  /**
   * For engines whose members a lost quorum can be rebuilt from on request
   * (docs/auto-healing.md, "Quorum loss"): the init container every member
   * runs, which acts only on a recovery's chosen member. Run by the backup
   * runner's image, with the data volume.
   */
  readonly rebuildContainer?: (props: MemberContainerProps) => RestoreContainer;
}

/** The pod's own name and namespace, for `$(POD_NAME)` expansion in arguments. */
export const POD_IDENTITY_ENV: k8s.EnvVar[] = [
  { name: 'POD_NAME', valueFrom: { fieldRef: { fieldPath: 'metadata.name' } } },
  { name: 'POD_NAMESPACE', valueFrom: { fieldRef: { fieldPath: 'metadata.namespace' } } },
];
