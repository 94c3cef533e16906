/**
 * A replicated key-value store cluster. The single source of truth for the DistributedKV API: the CRD, the TypeScript types and the validator are all generated from this file.
 */
export interface DistributedKV {
  /**
   * Always `example.com/v1alpha1`.
   */
  apiVersion: string;
  /**
   * Always `DistributedKV`.
   */
  kind: string;
  metadata: ObjectMeta;
  spec: DistributedKVSpec;
  status?: DistributedKVStatus;
}
/**
 * The subset of Kubernetes object metadata this project reads. The API server owns the rest.
 *
 * This interface was referenced by `DistributedKV`'s JSON-Schema
 * via the `definition` "ObjectMeta".
 */
export interface ObjectMeta {
  name?: string;
  namespace?: string;
  uid?: string;
  generation?: number;
  resourceVersion?: string;
  labels?: {
    [k: string]: string;
  };
  annotations?: {
    [k: string]: string;
  };
  finalizers?: string[];
  deletionTimestamp?: string;
}
/**
 * What the cluster should be: written by humans (or GitOps), never by the controller.
 *
 * This interface was referenced by `DistributedKV`'s JSON-Schema
 * via the `definition` "DistributedKVSpec".
 */
export interface DistributedKVSpec {
  /**
   * Number of members. Odd sizes tolerate the most failures for their cost: a cluster of N members stays writable while a majority (N/2+1) is up.
   */
  size: number;
  /**
   * Container image of the key-value server, e.g. `registry.example.com/kv/server:1.4.2`. Pin a tag or digest: the image is part of the desired state.
   */
  image: string;
  /**
   * Persistent volume for each member. Fixed when the cluster is created: a StatefulSet's volume claim templates cannot change.
   */
  storage?: {
    /**
     * Capacity of each member's volume, in binary units (e.g. `10Gi`).
     */
    size?: string;
    /**
     * StorageClass of the volumes. Omit to use the cluster's default class.
     */
    storageClassName?: string;
  };
  /**
   * Compute resources of each member's server container. Omit to leave them unset.
   */
  resources?: {
    /**
     * Resources the scheduler reserves for each member.
     */
    requests?: {
      /**
       * CPU, in cores or millicores (e.g. `2`, `500m`).
       */
      cpu?: number | string;
      /**
       * Memory, in bytes with an optional suffix (e.g. `512Mi`, `4Gi`).
       */
      memory?: number | string;
    };
    /**
     * Upper bounds enforced on each member.
     */
    limits?: {
      /**
       * CPU, in cores or millicores (e.g. `2`, `500m`).
       */
      cpu?: number | string;
      /**
       * Memory, in bytes with an optional suffix (e.g. `512Mi`, `4Gi`).
       */
      memory?: number | string;
    };
  };
  /**
   * Periodic backups to S3. Omit to run no backups (and remove an existing backup CronJob).
   */
  backup?: {
    /**
     * Where backups go: `s3://bucket/prefix`.
     */
    s3Path: string;
    /**
     * When to back up: a standard 5-field cron expression (minute hour day-of-month month day-of-week, e.g. `0 2 * * *`) or one of `@hourly`, `@daily`, `@weekly`, `@monthly`, `@yearly`. Times are in the controller manager's time zone (usually UTC).
     */
    schedule: string;
    /**
     * Container image that takes a backup and uploads it to `s3Path`.
     */
    backupImage?: string;
  };
}
/**
 * What the controller observed. Written only through the status subresource.
 *
 * This interface was referenced by `DistributedKV`'s JSON-Schema
 * via the `definition` "DistributedKVStatus".
 */
export interface DistributedKVStatus {
  /**
   * The metadata.generation this status describes.
   */
  observedGeneration?: number;
  /**
   * Members that pass their readiness probe.
   */
  readyReplicas?: number;
  /**
   * When the last backup succeeded.
   */
  lastBackupTime?: string;
  conditions?: Condition[];
  /**
   * The objects generated for this cluster, with the hash of what was applied.
   */
  generatedObjects?: GeneratedObject[];
}
/**
 * A standard Kubernetes condition (metav1.Condition).
 *
 * This interface was referenced by `DistributedKV`'s JSON-Schema
 * via the `definition` "Condition".
 */
export interface Condition {
  /**
   * `Available`, `Progressing` or `Degraded`.
   */
  type: string;
  status: "True" | "False" | "Unknown";
  observedGeneration?: number;
  lastTransitionTime: string;
  reason: string;
  message: string;
}
/**
 * One object the controller generated and owns for this cluster.
 *
 * This interface was referenced by `DistributedKV`'s JSON-Schema
 * via the `definition` "GeneratedObject".
 */
export interface GeneratedObject {
  apiVersion: string;
  kind: string;
  name: string;
  uid?: string;
  /**
   * sha256 of the object's desired content.
   */
  hash?: string;
}
