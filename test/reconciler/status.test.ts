/**
 * What the status says, given what was observed. (Against the real API
 * server there are no pods yet, so the observed StatefulSet and CronJob
 * statuses are given here as a kube-controller-manager would write them.)
 */
import { desiredStatus, statusChanged, statusPatch, type ObservedState } from '../../reconciler/core/status.js';

const NOW = new Date('2026-11-22T10:00:00.123Z');
const LATER = new Date('2026-11-22T11:00:00Z');

function observed(overrides: Partial<ObservedState> = {}): ObservedState {
  return {
    generation: 2,
    size: 5,
    statefulSet: { metadata: { generation: 3 }, status: { readyReplicas: 5, updatedReplicas: 5, observedGeneration: 3 } },
    generatedObjects: [{ apiVersion: 'apps/v1', kind: 'StatefulSet', name: 'kv', uid: 'u1', hash: 'h1' }],
    ...overrides,
  };
}

const condition = (status: ReturnType<typeof desiredStatus>, type: string) => status.conditions!.find((c) => c.type === type)!;

describe('the status of a DistributedKV', () => {
  it('reports ready members from the StatefulSet and is Available with a majority', () => {
    const status = desiredStatus(observed({ statefulSet: { metadata: { generation: 3 }, status: { readyReplicas: 3, updatedReplicas: 5, observedGeneration: 3 } } }), undefined, NOW);
    expect(status.readyReplicas).toBe(3);
    expect(status.observedGeneration).toBe(2);
    expect(condition(status, 'Available')).toMatchObject({ status: 'True', reason: 'QuorumAvailable', observedGeneration: 2, lastTransitionTime: '2026-11-22T10:00:00Z' });
    expect(condition(status, 'Progressing')).toMatchObject({ status: 'True', reason: 'RollingOut' });
  });

  it('is not Available below a majority (2 of 5)', () => {
    const status = desiredStatus(observed({ statefulSet: { metadata: { generation: 3 }, status: { readyReplicas: 2, updatedReplicas: 5, observedGeneration: 3 } } }), undefined, NOW);
    expect(condition(status, 'Available')).toMatchObject({ status: 'False', reason: 'QuorumUnavailable', message: '2 of 5 members ready; 3 are needed for a majority' });
  });

  it('has finished progressing only when every member is updated and ready at the current StatefulSet generation', () => {
    expect(condition(desiredStatus(observed(), undefined, NOW), 'Progressing')).toMatchObject({ status: 'False', reason: 'Reconciled' });
    const stale = observed({ statefulSet: { metadata: { generation: 4 }, status: { readyReplicas: 5, updatedReplicas: 5, observedGeneration: 3 } } });
    expect(condition(desiredStatus(stale, undefined, NOW), 'Progressing')).toMatchObject({ status: 'True', reason: 'RollingOut' });
  });

  it('reports what the backups did: lastBackupTime, lastBackupFailureTime, BackupFailing and BackupStale; none of it without backups', () => {
    const backup = {
      lastBackupTime: '2026-11-22T02:00:07Z', lastBackupFailureTime: '2026-11-21T02:00:09Z',
      failing: { status: false, reason: 'LastRunSucceeded', message: 'backup Job kv-backup-1 succeeded at 2026-11-22T02:00:07Z' },
      stale: { status: true, reason: 'NoRecentSuccess', message: 'two scheduled runs passed' },
    };
    const status = desiredStatus(observed({ backup }), undefined, NOW);
    expect(status).toMatchObject({ lastBackupTime: '2026-11-22T02:00:07Z', lastBackupFailureTime: '2026-11-21T02:00:09Z' });
    expect(condition(status, 'BackupFailing')).toMatchObject({ status: 'False', reason: 'LastRunSucceeded' });
    expect(condition(status, 'BackupStale')).toMatchObject({ status: 'True', reason: 'NoRecentSuccess' });
    const none = desiredStatus(observed(), undefined, NOW);
    expect(none).not.toHaveProperty('lastBackupTime');
    expect(none.conditions!.map((c) => c.type)).not.toEqual(expect.arrayContaining(['BackupFailing']));
    expect(none.conditions!.map((c) => c.type)).not.toContain('BackupStale');
  });

  it('is Degraded with the reason and message it is given, and not otherwise', () => {
    expect(condition(desiredStatus(observed(), undefined, NOW), 'Degraded')).toMatchObject({ status: 'False', reason: 'AsExpected' });
    const invalid = desiredStatus(observed({ size: undefined, statefulSet: undefined, degraded: { reason: 'InvalidSpec', message: 'spec.size: must be <= 9' } }), undefined, NOW);
    expect(condition(invalid, 'Degraded')).toMatchObject({ status: 'True', reason: 'InvalidSpec', message: 'spec.size: must be <= 9' });
    expect(condition(invalid, 'Available')).toMatchObject({ status: 'False', reason: 'InvalidSpec' });
  });

  it('keeps a condition\'s lastTransitionTime while its status holds, so an unchanged cluster needs no status write', () => {
    const first = desiredStatus(observed(), undefined, NOW);
    const again = desiredStatus(observed(), first, LATER);
    expect(again).toEqual(first);
    expect(statusChanged(first, again)).toBe(false);

    const degraded = desiredStatus(observed({ degraded: { reason: 'ApplyFailed', message: 'x' } }), first, LATER);
    expect(condition(degraded, 'Degraded').lastTransitionTime).toBe('2026-11-22T11:00:00Z');
    expect(condition(degraded, 'Available').lastTransitionTime).toBe('2026-11-22T10:00:00Z');
    expect(statusChanged(first, degraded)).toBe(true);
  });

  it('tells the truth about a running cluster whose spec is refused: members from the live StatefulSet, and Degraded', () => {
    const running = { metadata: { generation: 3 }, spec: { replicas: 5 }, status: { readyReplicas: 5, updatedReplicas: 5, observedGeneration: 3 } };
    const status = desiredStatus(observed({ size: undefined, statefulSet: running, degraded: { reason: 'InvalidSpec', message: 'spec.backup.schedule: runs backwards' } }), undefined, NOW);
    expect(status.readyReplicas).toBe(5);
    expect(condition(status, 'Available')).toMatchObject({ status: 'True', reason: 'QuorumAvailable' });
    expect(condition(status, 'Progressing')).toMatchObject({ status: 'False', reason: 'Reconciled' });
    expect(condition(status, 'Degraded')).toMatchObject({ status: 'True', reason: 'InvalidSpec' });
  });

  it('removes a field that no longer applies (lastBackupTime) with an explicit null, and then patches nothing', () => {
    const withBackup = desiredStatus(observed({ backup: {
      lastBackupTime: '2026-11-22T02:00:07Z',
      failing: { status: false, reason: 'LastRunSucceeded', message: 'ok' }, stale: { status: false, reason: 'RecentSuccess', message: 'ok' },
    } }), undefined, NOW);
    const without = desiredStatus(observed(), withBackup, LATER);
    expect(statusPatch(withBackup, without).status).toMatchObject({ lastBackupTime: null, readyReplicas: 5 });
    // What the API server stores after that merge patch equals `without`: the next reconcile finds nothing to write.
    const stored = JSON.parse(JSON.stringify({ ...withBackup, ...statusPatch(withBackup, without).status }), (_k, v) => (v === null ? undefined : v));
    expect(statusChanged(stored, desiredStatus(observed(), stored, LATER))).toBe(false);
    expect(statusPatch(undefined, without).status).not.toHaveProperty('lastBackupTime');
  });

  it('removes a nested field that no longer applies (tls.migration once a migration is done) with an explicit null', () => {
    const migrating = { ...desiredStatus(observed(), undefined, NOW), tls: { mode: 'operator' as const, peer: false, client: false, reason: 'moving', migration: { phase: 'Switching' as const, membersDone: ['kv-2'] } } };
    const done = { ...desiredStatus(observed(), migrating, LATER), tls: { mode: 'operator' as const, peer: true, client: true } };
    expect(statusPatch(migrating, done).status.tls).toEqual({ mode: 'operator', peer: true, client: true, reason: null, migration: null });
  });

  describe('with a membership (etcd engine)', () => {
    const member = (name: string, over: Record<string, unknown> = {}) => ({ id: name, name, peerUrls: [], learner: false, healthy: true, leader: false, alarms: [], ...over });

    it('is Available on the members\' own word, lists them by role, and reports the scaling and upgrade', () => {
      const status = desiredStatus(observed({
        membership: {
          phase: 'ScalingOut', message: 'adding kv-3',
          members: [member('kv-0', { leader: true }), member('kv-1'), member('kv-2', { healthy: false }), member('kv-3', { learner: true, healthy: false })],
          upgrade: { upgrading: true, message: 'restarting kv-2', currentVersion: 'etcd:3.6.8', targetVersion: 'etcd:3.6.9', updatedMembers: 1 },
        },
      }), undefined, NOW);
      expect(condition(status, 'Available')).toMatchObject({ status: 'True', message: '2 of 3 voting members healthy; a majority (2) accepts writes' });
      expect(status.members).toEqual([
        { name: 'kv-0', role: 'leader', healthy: true }, { name: 'kv-1', role: 'follower', healthy: true },
        { name: 'kv-2', role: 'follower', healthy: false }, { name: 'kv-3', role: 'learner', healthy: false },
      ]);
      expect(condition(status, 'Scaling')).toMatchObject({ status: 'True', reason: 'ScalingOut', message: 'adding kv-3' });
      expect(condition(status, 'Upgrading')).toMatchObject({ status: 'True', message: 'restarting kv-2' });
      expect(status).toMatchObject({ currentVersion: 'etcd:3.6.8', targetVersion: 'etcd:3.6.9', updatedMembers: 1 });
    });

    it('records how many learners of a pod were removed for not catching up, and drops the record once there is none', () => {
      const retrying = desiredStatus(observed({ membership: { phase: 'Stable', message: '', learnerRetry: { pod: 'kv-2', attempts: 2 } } }), undefined, NOW);
      expect(retrying.learnerRetry).toEqual({ pod: 'kv-2', attempts: 2 });
      const stored = JSON.parse(JSON.stringify({ ...retrying }));
      const promoted = desiredStatus(observed({ membership: { phase: 'Stable', message: '' } }), stored, LATER);
      expect(promoted).not.toHaveProperty('learnerRetry');
      expect(statusPatch(stored, promoted).status).toHaveProperty('learnerRetry', null);
    });

    it('is not Available when the quorum is lost, whatever the pods\' readiness says', () => {
      const status = desiredStatus(observed({ membership: { phase: 'QuorumLost', message: '1 of 3 voting members healthy; not reachable: kv-1, kv-2' } }), undefined, NOW);
      expect(condition(status, 'Available')).toMatchObject({ status: 'False', reason: 'QuorumLost', message: '1 of 3 voting members healthy; not reachable: kv-1, kv-2' });
    });

    it('says a storage growth is blocked, or under way, in conditions of their own', () => {
      const blocked = desiredStatus(observed({ storage: { kind: 'blocked', message: 'needs StorageClass standard to allow volume expansion' } }), undefined, NOW);
      expect(condition(blocked, 'StorageResizeBlocked')).toMatchObject({ status: 'True', message: 'needs StorageClass standard to allow volume expansion' });
      const growing = desiredStatus(observed({ storage: { kind: 'resizeClaim', message: 'growing data-kv-0' } }), undefined, NOW);
      expect(condition(growing, 'StorageResizing')).toMatchObject({ status: 'True', message: 'growing data-kv-0' });
      expect(desiredStatus(observed(), undefined, NOW).conditions!.map((c) => c.type)).toEqual(['Available', 'Progressing', 'Degraded']);
    });
  });
});
