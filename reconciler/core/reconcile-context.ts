/**
 * What one reconcile works with, and the contract it keeps with the loop
 * (controller-runtime's): a key in, a result or an error out. An ordinary
 * error means "retry with backoff"; a TerminalError means "do not retry
 * until the object changes".
 */
import type { GeneratorConfig } from '../../api/config.js';
import type { ClusterMemory } from '../memory/cluster-memory.js';
import type { EventRecorder } from '../process/events.js';
import type { Informer } from '../../kube/informer.js';
import type { KubeClient } from '../../kube/client.js';
import type { Logger } from '../../kube/log.js';
import type { ControllerMetrics } from '../process/metrics.js';
import type { MemberAddresses } from '../day2/member-addresses.js';
import type { RestoreSourceCheck } from '../day2/restore-source-check.js';
import type { FleetRole } from '../fleet/fleet-role.js';
import type { WriteEchoes } from '../memory/write-echoes.js';

export interface ReconcileResult {
  /** Look again after this long even if nothing changes (0: at once, after this reconcile). */
  readonly requeueAfterMs?: number;
}

/** An error retrying cannot fix (an invalid spec): wait for the object to change. */
export class TerminalError extends Error {}

/** The kinds a DistributedKV generates, by `apiVersion/kind`. */
export type OwnedCaches = ReadonlyMap<string, Informer>;

export interface ReconcileContext {
  /** Fenced by the leadership term: a replica that lost the Lease sends nothing more. */
  readonly client: KubeClient;
  readonly config: GeneratorConfig;
  readonly clusters: Informer;
  readonly owned: OwnedCaches;
  readonly memory: ClusterMemory;
  readonly events: EventRecorder;
  readonly metrics: ControllerMetrics;
  /** Milliseconds since the epoch (injected so tests control time). */
  readonly now: () => number;
  /** How often a cluster blocked by an object that is not its own looks again (that object is not watched). */
  readonly objectConflictRecheckMs: number;
  readonly log: Logger;
  /** Where members are (membership engines); by default their per-pod DNS names. Tests map pods to loopback. */
  readonly memberAddresses?: MemberAddresses;
  /** How long a member may take to answer before it counts as unhealthy. */
  readonly memberTimeoutMs?: number;
  /** Whether a `spec.restore.from` can be restored, asked before a restoring cluster's objects are created. */
  readonly restoreSourceCheck: RestoreSourceCheck;
  /** The leadership term, as `client` is fenced by it: calls to the store's members are fenced the same way. */
  readonly term?: AbortSignal;
  /** Fleet mode (fleet-role.ts): this controller's part now; undefined outside fleet mode. */
  readonly fleet?: () => FleetRole | undefined;
  /** Writes go through it, so that their own watch events queue nothing (write-echoes.ts). */
  readonly writeEchoes: WriteEchoes;
  /** Whether the API server serves PodMonitors (served-kind.ts), asked only while monitoring is on; default: discovery on every call. */
  readonly podMonitorsServed?: () => Promise<boolean>;
  /** Whether the API server serves cert-manager's Certificates, asked only for a cluster in mode cert-manager; default as podMonitorsServed. */
  readonly certificatesServed?: () => Promise<boolean>;
}

/** `Kind/name`: how objects are named in Events, status messages and the controller's memory. */
export function objectName(o: { kind?: string; metadata: { name: string } }): string {
  return `${o.kind}/${o.metadata.name}`;
}
