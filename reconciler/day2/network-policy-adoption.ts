/**
 * Whether the controller applies a cluster's NetworkPolicy, so that
 * upgrading the controller harms nothing that runs: a cluster that already
 * ran without a NetworkPolicy of ours (its members reached by clients in
 * other namespaces, by a Prometheus in an unlabelled namespace) keeps
 * running without one until its spec says `networkPolicy.enabled: true`.
 * A cluster the controller creates gets one by default, and one the
 * controller applied is kept (a deleted one recreated) as before.
 *
 * The decision is recorded in `status.networkPolicy`, which the status
 * subresource keeps across controller restarts and which only the
 * controller writes; the live NetworkPolicy and the status's
 * generatedObjects are read as evidence too, so a status lost (restored
 * from a backup without it) or written by an earlier version still never
 * withdraws a policy already applied. A pure function: the core reads, this
 * decides (see step-decision.ts).
 */
import type { GeneratorConfig } from '../../api/config.js';
import type { DistributedKVSpec } from '../../imports/distributedkv.js';

/**
 * What `status.networkPolicy` says:
 * - `Applied`: the controller applies and repairs the cluster's NetworkPolicy;
 * - `Withheld`: the cluster ran without one before and none is applied until
 *   its spec sets `networkPolicy.enabled: true` (docs/network-policy.md, "Upgrading");
 * - `Off`: turned off by the spec or the configuration.
 */
export type NetworkPolicyState = 'Applied' | 'Withheld' | 'Off';

export interface NetworkPolicyAdoptionInput {
  readonly spec: Pick<DistributedKVSpec, 'networkPolicy'>;
  readonly config: Pick<GeneratorConfig, 'networkPolicy'>;
  /** `status.networkPolicy` as the controller last wrote it, if ever. */
  readonly recorded?: NetworkPolicyState;
  /**
   * The cluster's StatefulSet exists (controlled by it): its members run, and ran before this reconcile.
   * One this version created ran with its policy: a new StatefulSet is created only after its
   * NetworkPolicy (core/execute-writes.ts), so a StatefulSet without one is an earlier version's.
   */
  readonly statefulSetExists: boolean;
  /**
   * A NetworkPolicy of this cluster exists, is listed in its status's
   * generatedObjects, or was applied by this process: the controller applied one.
   */
  readonly policyApplied: boolean;
}

export interface NetworkPolicyAdoption {
  readonly state: NetworkPolicyState;
  /** Whether the NetworkPolicy is among the cluster's desired objects. */
  readonly apply: boolean;
  /** The condition that says so (type `NetworkPolicy`). */
  readonly condition: { readonly status: 'True' | 'False'; readonly reason: string; readonly message: string };
}

/** What the Withheld condition and its Event ask the user to do. */
export const WITHHELD_MESSAGE = 'the cluster ran without a NetworkPolicy before this controller version, so none is applied: clients in other namespaces would lose access. '
  + 'List them in spec.networkPolicy.clients (and label the metrics scrapers\' namespace), then set spec.networkPolicy.enabled: true (docs/network-policy.md, "Upgrading")';

export function decideNetworkPolicy(input: NetworkPolicyAdoptionInput): NetworkPolicyAdoption {
  const enabled = input.spec.networkPolicy?.enabled;
  if (!input.config.networkPolicy.enabled) return off('the configuration turns NetworkPolicies off for every cluster (networkPolicy.enabled: false)');
  if (enabled === false) return off('spec.networkPolicy.enabled is false');
  if (enabled === true) return applied('spec.networkPolicy.enabled is true');
  if (input.recorded === 'Applied' || input.policyApplied) return applied('the controller applied it and keeps it (set spec.networkPolicy.enabled: false to remove it)');
  // Nothing recorded, or Withheld, or Off before: a cluster whose members already run keeps running as it did.
  if (input.statefulSetExists) return { state: 'Withheld', apply: false, condition: { status: 'False', reason: 'Withheld', message: WITHHELD_MESSAGE } };
  return applied('a new cluster gets its NetworkPolicy by default');
}

function applied(why: string): NetworkPolicyAdoption {
  return { state: 'Applied', apply: true, condition: { status: 'True', reason: 'Applied', message: `the members' NetworkPolicy is applied: ${why}` } };
}

function off(why: string): NetworkPolicyAdoption {
  return { state: 'Off', apply: false, condition: { status: 'False', reason: 'Off', message: `no NetworkPolicy: ${why}` } };
}
