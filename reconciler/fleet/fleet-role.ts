/**
 * Fleet mode: the same DistributedKV definitions run in several Kubernetes
 * clusters (a primary and a standby region, fed by one GitOps repository),
 * and what is global (backups into S3, the definitions' export) must have
 * one writer. The controller of each cluster knows its part from the fleet
 * lock (fleet-lock.ts): `active`, it writes; `standby`, it
 * reconciles its own cluster as ever but writes nothing global (backup
 * CronJobs suspended, no export, no final backup) and says so in every
 * cluster's `Standby` condition.
 */
export type FleetRole =
  | { readonly role: 'active'; readonly member: string }
  | { readonly role: 'standby'; readonly member: string; readonly activeMember?: string };

/** The fleet member a lock holder identity names (`<member>/<process>`). */
export function memberOf(holderIdentity: string | undefined): string | undefined {
  if (!holderIdentity) return undefined;
  return holderIdentity.split('/')[0];
}

/** The Standby condition of every cluster a controller in fleet mode reconciles. */
export function standbyCondition(fleet: FleetRole): { type: 'Standby'; status: 'True' | 'False'; reason: string; message: string } {
  if (fleet.role === 'active') {
    return { type: 'Standby', status: 'False', reason: 'Active', message: `this Kubernetes cluster (${fleet.member}) holds the fleet lock: it runs backups and the definitions' export` };
  }
  if (!fleet.activeMember) {
    return { type: 'Standby', status: 'True', reason: 'LockNotHeld', message: `this cluster (${fleet.member}) does not hold the fleet lock and no other holder is known yet: its backups and the definitions' export are suspended until one is` };
  }
  return { type: 'Standby', status: 'True', reason: 'ActiveElsewhere', message: `Kubernetes cluster ${fleet.activeMember} holds the fleet lock: backups and the definitions' export run there, this cluster's (${fleet.member}) are suspended` };
}
