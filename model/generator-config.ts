/**
 * The shape of a generator configuration (`dkv.config.yaml`): the types every
 * layer shares. Loading, validating and checking a configuration live above
 * this: api/config.ts loads and validates, constructs/config-check.ts checks what it generates.
 */
import type { LabelSelector } from './label-selector.js';

/** An RFC 6902 operation applied to every generated object of one kind. */
export interface JsonPatchOperation {
  readonly op: 'add' | 'remove' | 'replace' | 'copy' | 'move' | 'test';
  readonly path: string;
  readonly from?: string;
  readonly value?: unknown;
}

/** The store the members run; see engines/. */
export type EngineName = 'etcd' | 'generic';

/** The kinds a configuration can patch. */
export type PatchableKind = 'StatefulSet' | 'Service' | 'PodDisruptionBudget' | 'CronJob' | 'ConfigMap' | 'NetworkPolicy';

/** A cert-manager issuer, as a Certificate's spec.issuerRef names it. */
export interface CertManagerIssuerRef {
  readonly name: string;
  readonly kind: 'Issuer' | 'ClusterIssuer';
  /** The issuer's API group: `cert-manager.io` for cert-manager's own issuers, another for an external issuer. */
  readonly group: string;
}

/** A quantity as Kubernetes reads it: `500m`, `2`, `1Gi`. */
export type ResourceQuantity = string | number;

/**
 * A container's compute resources: what the scheduler reserves for it
 * (requests) and the most it may use (limits). A container with neither is
 * best-effort, the first Kubernetes evicts under node pressure.
 */
export interface ContainerResources {
  readonly requests: { readonly cpu?: ResourceQuantity; readonly memory?: ResourceQuantity };
  readonly limits: { readonly cpu?: ResourceQuantity; readonly memory?: ResourceQuantity };
}

/**
 * Everything about generated objects that a platform team may want to change
 * without changing code: names, labels, annotations, ports and per-kind
 * patches. `dkv.config.yaml` at the package root is the documented default.
 */
export interface GeneratorConfig {
  /** The file this configuration was loaded from (the last one merged), for messages that point into it. */
  readonly file?: string;
  readonly names: {
    readonly statefulSet: string;
    readonly headlessService: string;
    readonly clientService: string;
    readonly podDisruptionBudget: string;
    readonly backupCronJob: string;
    /** The ConfigMap from which an engine's members read how to join (etcd only). */
    readonly memberConfig: string;
    /** The NetworkPolicy of the members' ports (networkPolicy below). */
    readonly networkPolicy: string;
  };
  readonly labels: Readonly<Record<string, string>>;
  readonly selectorLabels: readonly string[];
  readonly annotations: Readonly<Record<string, string>>;
  readonly hashAnnotation: string;
  readonly engine: EngineName;
  /** The cluster's DNS domain, in the addresses members advertise to each other. */
  readonly clusterDomain: string;
  readonly ports: { readonly client: number; readonly peer: number; readonly metrics: number };
  readonly dataPath: string;
  /** The member pods, beyond what the spec says (docs/maintenance.md, "Resources and priority"). */
  readonly members: {
    /** The member container's resources when the spec gives none (spec.resources replaces them whole). */
    readonly resources: ContainerResources;
    /** The PriorityClass of every member pod; empty: none (the cluster's default priority). */
    readonly priorityClassName: string;
  };
  /** The init container with which a restoring cluster's members restore a backup (`dkv restore`). */
  readonly restore: {
    readonly resources: ContainerResources;
  };
  readonly patches: Readonly<Partial<Record<PatchableKind, readonly JsonPatchOperation[]>>>;
  readonly controller: {
    readonly fieldManager: string;
    readonly finalizer: string;
    readonly detectOnlyAnnotation: string;
    readonly leaseName: string;
  };
  /**
   * The conversion webhook between the API's served versions
   * (conversion/webhook-server.ts), and the certificate it serves.
   */
  readonly conversion: {
    /** Where each controller replica serves HTTPS (/convert). */
    readonly port: number;
    /** The Service in the CRD's clientConfig. */
    readonly serviceName: string;
    readonly serviceNamespace: string;
    /** An https:// URL the API server calls instead of the Service (a controller outside the cluster); empty: the Service. */
    readonly url: string;
    /** The Secret (controller's namespace) with ca.crt, ca.key, tls.crt, tls.key. */
    readonly certificateSecret: string;
    readonly caValidityDays: number;
    readonly certificateValidityDays: number;
  };
  /**
   * The Secrets of a cluster's TLS (spec.tls mode `operator`), in its
   * namespace, and how long what the controller issues is valid
   * (model/tls.ts, docs/security.md).
   */
  readonly tls: {
    /** The cluster's CA: ca.crt and ca.key. Never mounted into a pod. */
    readonly authoritySecret: string;
    /** The members' certificate (tls.crt, tls.key) and the CA (ca.crt), mounted read-only into every member. */
    readonly memberSecret: string;
    /** The client certificate (tls.crt, tls.key, ca.crt) of the controller, the backup runner and the restore init container. */
    readonly clientSecret: string;
    readonly caValidityDays: number;
    readonly certificateValidityDays: number;
    /**
     * How long the issuing CA (an intermediate of the cluster's CA that signs
     * the leaves, engines/etcd/certificate-rotation.ts) is valid; capped by the CA's own validity.
     */
    readonly issuerValidityDays: number;
    /** A leaf, and the issuing CA, are renewed once this share of their validity has passed (cert-manager's default: 2/3). */
    readonly renewalFraction: number;
    /** An annotation on a DistributedKV whose every new value starts a rotation of the issuing CA. */
    readonly rotateCaAnnotation: string;
    /**
     * How long a plain-HTTP cluster moving to TLS serves plain HTTP beside
     * TLS on its client port, for its clients to move to https with a
     * certificate, before plain HTTP is dropped (engines/etcd/tls-migration.ts).
     */
    readonly plainClientGraceSeconds: number;
    /**
     * spec.tls mode `cert-manager`: cert-manager issues the member and client
     * Secrets above from Certificates the generator emits
     * (constructs/certificates.ts), with this issuer; the CA Secret is then
     * cert-manager's issuer's business, not the cluster's.
     */
    readonly certManager: {
      /** The Issuer (the cluster's namespace) or ClusterIssuer that signs the certificates; an empty name: none configured, and mode `cert-manager` is refused. */
      readonly issuerRef: CertManagerIssuerRef;
    };
  };
  /**
   * Client identities (spec.clients, docs/client-identities.md): the Secret
   * each named client's certificate is issued into, and the Secret of the
   * etcd root user the controller (and the backup runner) authenticate as
   * once etcd authentication is on.
   */
  readonly clients: {
    /** A client's certificate (tls.crt, tls.key, ca.crt): `{name}` is the cluster's, `{client}` the client's. */
    readonly secret: string;
    /** The root user's password and a certificate without a common name (etcd's gateway refuses one with a common name once authentication is on). */
    readonly rootSecret: string;
    /** How long a client identity's certificate (root's included) is valid; renewed at tls.renewalFraction of it. */
    readonly certificateValidityDays: number;
    /**
     * How long a client certificate replaced by renewal keeps working before
     * it enters the members' CRL (engines/etcd/client-revocation.ts): time for
     * a client that reads its certificate only at start to pick up the new one.
     */
    readonly supersededGraceSeconds: number;
  };
  /** Fleet mode: the Lease on the coordination API server whose holder writes what is global (reconciler/fleet/fleet-lock.ts). */
  readonly fleet: {
    readonly leaseName: string;
    readonly leaseNamespace: string;
  };
  /** Sharded controllers (`dkv controller --shards auto`): how replicas share the clusters (kube/shard-buckets.ts). */
  readonly sharding: {
    /** The replicas' membership Leases are `<group>-<identity>`, labelled with the group. */
    readonly group: string;
    /** Fixed buckets of the uid hash space that replicas hand over (a power of two). */
    readonly buckets: number;
    /** The label every generated object carries: its cluster's bucket, so a replica watches only its clusters' children. */
    readonly bucketLabel: string;
  };
  /**
   * How the controller defragments members and recovers from NOSPACE
   * (engines/etcd/defragmentation.ts); the spec's
   * maintenance.defragmentation says when and at which free share.
   */
  readonly maintenance: {
    /** Database files smaller than this (MiB) are not defragmented for their free share alone: too little to win for a member's pause. */
    readonly minDefragmentationSizeMiB: number;
    /** Without a window in the spec: each member at most once per this many minutes. */
    readonly defragmentationIntervalMinutes: number;
    /** NOSPACE is disarmed once every member's database is this share below the quota, so the next writes do not raise it again at once. */
    readonly nospaceMarginPercent: number;
  };
  /**
   * The NetworkPolicy every cluster gets (constructs/network-policy.ts,
   * docs/network-policy.md): who may reach the members' ports beyond what
   * the spec's networkPolicy.clients says.
   */
  readonly networkPolicy: {
    /** `false`: no cluster gets one (a network plugin that enforces none); a spec can also turn its own off. */
    readonly enabled: boolean;
    /** The metrics port (metrics, /readyz, /livez): from every pod of the namespaces this selects (the scrapers'). */
    readonly metricsNamespaceSelector: LabelSelector;
    /** The controller's pods, which call each member's client port (membership, health, maintenance). */
    readonly controller: {
      /** The namespace the controller runs in (`dkv install --namespace`). */
      readonly namespaceSelector: LabelSelector;
      /** The controller's pods in it. */
      readonly podSelector: LabelSelector;
    };
  };
  /**
   * The Prometheus Operator's objects (docs/monitoring.md): with `enabled`, a
   * PodMonitor for every cluster's members (constructs/pod-monitor.ts) and,
   * in the install bundle, a ServiceMonitor for the controller and the
   * PrometheusRule of the alerts (constructs/install/).
   */
  readonly monitoring: {
    /** `false`: none of them, for a Kubernetes cluster without the Prometheus Operator (its CRDs). */
    readonly enabled: boolean;
    /** On every PodMonitor, ServiceMonitor and PrometheusRule: what the Prometheus' podMonitorSelector, serviceMonitorSelector and ruleSelector match. */
    readonly labels: Readonly<Record<string, string>>;
    /** How often Prometheus scrapes the members and the controller (a Prometheus duration, `30s`). */
    readonly scrapeInterval: string;
    /** Where the PrometheusRule goes; empty: the controller's namespace. */
    readonly ruleNamespace: string;
    /** Each alert's runbook_url is this with the alert's section (`#dkvmemberdown`): your copy of docs/monitoring.md. */
    readonly runbookUrl: string;
  };
  /** Member replacement and quorum-loss recovery (engines/etcd/replacement.ts, docs/auto-healing.md). */
  readonly healing: {
    /** How long a voting member may stay unhealthy, for no reason the controller can read, before it is replaced. */
    readonly unhealthySeconds: number;
    /** How long a learner may take to be promoted before it is removed and added again with an empty volume. */
    readonly learnerCatchUpSeconds: number;
    /**
     * How long the controller must see a quorum lost, on every look and with no member reporting a leader,
     * before it acts on a recovery request (engines/etcd/recovery.ts): an election, a slow status call or a
     * network fault on the controller's side must not pass for a lost quorum.
     */
    readonly quorumLossSeconds: number;
    /** How often the etcd leader compares the members' data (etcd's periodic corruption check, engines/etcd/corruption-check.ts); 0: never. */
    readonly corruptionCheckSeconds: number;
    /** Written on a member's claim with the member's id: the replacement is decided, and every later step reads it there. */
    readonly replacementAnnotation: string;
    /** Set by a user on a DistributedKV that lost its quorum: the member pod to rebuild the cluster from, or `auto`. */
    readonly recoveryAnnotation: string;
  };
  /** Where and how `dkv backup` stores backups (the location itself is the spec's `backup.s3Path`). */
  readonly backup: {
    /** Complete backups kept per cluster; older ones are deleted after each success. */
    readonly retain: number;
    /** What the backup CronJob runs unless the spec names a `backupImage` of its own. */
    readonly runner: {
      /** An image with `dkv` on its PATH: the controller's own image. */
      readonly image: string;
      /** A Secret whose keys become the runner's environment (AWS_ACCESS_KEY_ID, AWS_SECRET_ACCESS_KEY); optional, for IRSA. */
      readonly credentialsSecret: string;
      /** The backup CronJob's container resources (the spec's own backupImage runs with them too). */
      readonly resources: ContainerResources;
    };
    /** The backup taken when a cluster with backups is deleted, before its objects go. */
    readonly final: {
      /** Holds the deletion until the final backup has run (or failed, or timed out). */
      readonly finalizer: string;
      /** From the deletion: past it, the deletion goes on without a final backup (an Event says so). */
      readonly timeoutSeconds: number;
      /** A DistributedKV with this annotation set to "true" is deleted without a final backup. */
      readonly skipAnnotation: string;
    };
    /**
     * The clusters' definitions (what `dkv export` writes), exported by the
     * leading controller into S3 on a schedule, so that the objects a
     * restore or an upgrade needs survive the control plane.
     */
    readonly definitions: {
      /** `s3://bucket/prefix`; empty: no scheduled export. */
      readonly s3Path: string;
      /** Cron, in UTC: five fields, or six with seconds first. */
      readonly schedule: string;
      /** Exports kept; older ones are deleted after each export. */
      readonly retain: number;
    };
    /**
     * CSI VolumeSnapshots: with a class, each backup also cuts a VolumeSnapshot
     * of the member it backs up (and retention deletes it with its backup).
     */
    readonly volumeSnapshots: {
      /** A VolumeSnapshotClass; empty: no volume snapshots. */
      readonly className: string;
      /**
       * The runner's ServiceAccount when volume snapshots are on: it creates, reads and deletes VolumeSnapshots
       * (the install bundle's ClusterRole `dkv-backup-runner`, bound in its namespace: deploy/README.md).
       */
      readonly serviceAccountName: string;
      /** How long a backup waits for its VolumeSnapshot to be ready to use. */
      readonly readyTimeoutSeconds: number;
    };
    readonly s3: {
      /** Empty: AWS S3 for the region. Else an S3-compatible store's URL. */
      readonly endpoint: string;
      readonly region: string;
      /** `https://host/bucket/key` instead of `https://bucket.host/key`: most S3-compatible stores want it. */
      readonly forcePathStyle: boolean;
      /** Multipart part size: the runner holds about two parts in memory, whatever the snapshot's size. */
      readonly partSizeMiB: number;
    };
  };
}
