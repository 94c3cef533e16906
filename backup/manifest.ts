/**
 * What a backup says about itself, written after its data: a reader (a
 * restore, the retention sweep, a human with `aws s3 cp`) trusts a backup
 * only when its manifest exists, and checks the data against it.
 */
export interface BackupManifest {
  readonly apiVersion: 'dkv.example.com/v1';
  readonly kind: 'BackupManifest';
  readonly cluster: { readonly namespace: string; readonly name: string };
  readonly engine: string;
  /** The member the data came from, and the server version it ran. */
  readonly member: { readonly name: string; readonly version?: string };
  /** Start and end, ISO 8601 UTC. */
  readonly startedAt: string;
  readonly finishedAt: string;
  readonly files: readonly BackupFile[];
  /** The CSI VolumeSnapshot of the member's volume cut with this backup, when volume snapshots are on. */
  readonly volumeSnapshot?: {
    readonly namespace: string;
    readonly name: string;
    readonly claim: string;
    /** The point in time the snapshot holds. */
    readonly creationTime: string;
    readonly restoreSize?: string;
    /** From asking for the snapshot to seeing it cut: how long a store that needs quiescing would be held. */
    readonly cutSeconds: number;
  };
}

export interface BackupFile {
  /** Relative to the backup's folder. */
  readonly name: string;
  readonly bytes: number;
  /** sha256 of the bytes, hex. */
  readonly sha256: string;
}
