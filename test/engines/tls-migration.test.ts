/**
 * The migration of a running plain-HTTP cluster to TLS, decided from the
 * live template's arguments, the rollout and the members' peer URLs alone
 * (engines/etcd/tls-migration.ts); and the rendering of each phase's
 * template (the real-etcd run is tls-migration-etcd.test.ts).
 */
import { decideTlsMigration, gateSwitchingRestart, templateTls, type TlsMigrationInput } from '../../engines/etcd/tls-migration.js';
import type { MemberPod, UpgradeAction } from '../../engines/etcd/upgrade.js';
import type { MemberStatus } from '../../engines/membership.js';
import { tlsAsked, tlsInEffect, type TlsInEffect } from '../../model/tls.js';
import { synthesizeCluster } from '../../constructs/synthesize.js';
import { validateDistributedKV, type ValidResource } from '../../api/validate.js';
import { DEFAULT_CONFIG } from '../generator/support.js';
import { liveTlsOf } from '../../engines/etcd/tls-files.js';

const NOW = Date.parse('2026-11-27T02:00:00Z');
const GRACE_MS = 7 * 86_400_000;

function render(tls: TlsInEffect): string[] {
  const result = validateDistributedKV({ apiVersion: 'example.com/v1beta1', kind: 'DistributedKV', metadata: { name: 'kv', namespace: 'shop' }, spec: { size: 3, image: 'registry.k8s.io/etcd:3.6.8-0' } }, DEFAULT_CONFIG);
  const resource = (result as { resource: ValidResource }).resource;
  const objects = synthesizeCluster(resource, DEFAULT_CONFIG, undefined, { tls }) as any[];
  return objects.find((o) => o.kind === 'StatefulSet').spec.template.spec.containers[0].args;
}
const PLAIN_ARGS = render({ mode: 'disabled', peer: false, client: false });
const FINAL: TlsInEffect = { mode: 'operator', peer: true, client: true };
const FINAL_ARGS = render(FINAL);
const TRUSTING: TlsInEffect = { mode: 'operator', peer: false, client: true, transition: { peerCertificates: true, plainClients: true } };
const TRUSTING_ARGS = render(TRUSTING);

function member(i: number, scheme: 'http' | 'https', over: Partial<MemberStatus> = {}): MemberStatus {
  return { id: `${1000 + i}`, name: `kv-${i}`, peerUrls: [`${scheme}://kv-${i}.kv-peers:2380`], learner: false, healthy: true, leader: i === 0, alarms: [], ...over };
}
function pod(i: number, args: readonly string[], over: Partial<MemberPod> = {}): MemberPod {
  return { name: `kv-${i}`, uid: `uid-${i}`, resourceVersion: `${i}`, revision: args === FINAL_ARGS ? 'new' : 'old', image: 'etcd', args, deleting: false, ...over };
}

function decide(args: readonly string[] | undefined, over: Partial<TlsMigrationInput> = {}) {
  return decideTlsMigration({
    asked: tlsAsked({ tls: { mode: 'operator' } }), explicit: true, live: args && templateTls(args), rolledOut: true, certificatesIssued: true,
    guarded: true, clientGraceMs: GRACE_MS, now: NOW, ...over,
  });
}

describe('the phases of a migration to TLS', () => {
  it('leaves a running plain cluster plain unless its spec says mode operator itself, and says how to start', () => {
    expect(decide(PLAIN_ARGS, { explicit: false })).toBeUndefined();
    expect(tlsInEffect({}, { peer: false, client: false }).reason).toMatch(/set spec\.tls\.mode: operator to start the migration/);
    // A new cluster is no migration: the spec's TLS from the start.
    expect(decide(undefined)).toBeUndefined();
  });

  it('does not start moving the client port while no NetworkPolicy restricts who reaches it and the spec does not accept that, and says how to start', () => {
    // The grace would serve plain HTTP beside TLS to anyone who reaches the port: nothing the members run changes.
    for (const certificatesIssued of [false, true]) {
      const step = decide(PLAIN_ARGS, { guarded: false, certificatesIssued })!;
      expect(step).toMatchObject({ phase: 'WaitingForNetworkPolicy', reach: { peer: false, client: false }, membersDone: [] });
      expect(render(step.render)).toEqual(PLAIN_ARGS);
      expect(step.message).toMatch(/spec\.networkPolicy\.enabled: true/);
      expect(step.message).toMatch(/spec\.tls\.migrateWithoutNetworkPolicy: true/);
    }
    // Guarded (the policy exists, or the spec accepts the open port): it starts.
    expect(decide(PLAIN_ARGS)!.phase).toBe('Trusting');
    // Once started, it goes on whatever happens to the policy: a half-moved cluster is not left half-way.
    expect(decide(TRUSTING_ARGS, { guarded: false, rolledOut: false })!.phase).toBe('Trusting');
    expect(decide(TRUSTING_ARGS, { guarded: false })!.phase).toBe('ClientGrace');
    expect(decide(FINAL_ARGS, { guarded: false, members: [member(0, 'http'), member(1, 'https'), member(2, 'https')] })!.phase).toBe('Switching');
    // A move of the peer port alone opens no plain client port: not held.
    const peerOnly = render({ mode: 'operator', peer: false, client: true });
    expect(decide(peerOnly, { guarded: false })!.phase).not.toBe('WaitingForNetworkPolicy');
  });

  it('issues the certificates first, rendering what runs (no member mounts a Secret that is not there yet)', () => {
    const step = decide(PLAIN_ARGS, { certificatesIssued: false })!;
    expect(step.phase).toBe('Issuing');
    expect(render(step.render)).toEqual(PLAIN_ARGS);
  });

  it('restarts every member with the certificates first: peer listener still plain, the client port serving TLS beside plain HTTP, the controller still calling over plain HTTP', () => {
    const step = decide(PLAIN_ARGS)!;
    expect(step).toMatchObject({ phase: 'Trusting', render: TRUSTING, reach: { client: false, peer: false } });
    const args = render(step.render);
    expect(args).toEqual(expect.arrayContaining([
      '--listen-peer-urls=http://0.0.0.0:2380', '--listen-client-urls=http://0.0.0.0:2379,https://0.0.0.0:2379',
      '--peer-cert-file=/etc/dkv/tls/member/tls.crt', '--peer-trusted-ca-file=/etc/dkv/tls/member/ca.crt', '--client-cert-auth',
    ]));
    expect(args.find((a) => a.startsWith('--initial-advertise-peer-urls='))).toMatch(/^--initial-advertise-peer-urls=http:\/\//);
    expect(templateTls(args)).toEqual({ peer: false, client: true, transition: { peerCertificates: true, plainClients: true } });
    // Until every pod runs it.
    expect(decide(TRUSTING_ARGS, { rolledOut: false })).toMatchObject({ phase: 'Trusting', reach: { client: false } });
  });

  it('then gives the clients their grace period, both schemes on the client port, from when every member served both', () => {
    const step = decide(TRUSTING_ARGS)!;
    expect(step).toMatchObject({ phase: 'ClientGrace', render: TRUSTING, reach: { client: true }, plainClientsSince: new Date(NOW).toISOString(), plainClientsUntil: new Date(NOW + GRACE_MS).toISOString() });
    expect(step.requeueAfterMs).toBe(GRACE_MS);
    // The clock is status's: a later look keeps its start.
    const later = decide(TRUSTING_ARGS, { now: NOW + GRACE_MS - 1000, plainClientsSince: new Date(NOW).toISOString() })!;
    expect(later).toMatchObject({ phase: 'ClientGrace', requeueAfterMs: 1000 });
  });

  it('switches to the TLS-only template when the grace period is over, and reports the members whose peer URL is https', () => {
    const step = decide(TRUSTING_ARGS, { now: NOW + GRACE_MS, plainClientsSince: new Date(NOW).toISOString() })!;
    expect(step).toMatchObject({ phase: 'Switching', render: FINAL });
    expect(render(step.render)).toEqual(FINAL_ARGS);
    const switching = decide(FINAL_ARGS, { rolledOut: false, members: [member(0, 'http'), member(1, 'https'), member(2, 'https')] })!;
    expect(switching).toMatchObject({ phase: 'Switching', membersDone: ['kv-1', 'kv-2'], reach: { client: true } });
    expect(switching.message).toMatch(/2 of 3 peer URLs on https/);
    // Done: every URL https, the final template applied.
    expect(decide(FINAL_ARGS, { members: [member(0, 'https'), member(1, 'https'), member(2, 'https')] })).toBeUndefined();
  });

  it('moves the peer listeners alone when the client port is to stay plain: no grace period, no plain client listener beside', () => {
    const asked = tlsAsked({ tls: { mode: 'operator', client: { enabled: false } } });
    const step = decide(PLAIN_ARGS, { asked })!;
    expect(step.render).toMatchObject({ peer: false, client: false, transition: { peerCertificates: true, plainClients: false } });
    const trusting = render(step.render);
    expect(trusting).toContain('--listen-client-urls=http://0.0.0.0:2379');
    expect(decide(trusting, { asked })).toMatchObject({ phase: 'Switching', render: { peer: true, client: false } });
  });

  it('goes back to plain HTTP when the spec says so before any peer URL was switched; refuses once the TLS template runs', () => {
    expect(decide(TRUSTING_ARGS, { asked: tlsAsked({ tls: { mode: 'disabled' } }), explicit: false })).toBeUndefined();
    // model/tls.ts then renders what the spec asks: the Trusting template reads as plain (its listeners still serve plain HTTP), nothing was switched yet.
    const live = liveTlsOf({ spec: { template: { spec: { containers: [{ args: TRUSTING_ARGS }] } } } });
    expect(tlsInEffect({ tls: { mode: 'disabled' } }, live)).toEqual({ mode: 'disabled', peer: false, client: false });
    expect(tlsInEffect({ tls: { mode: 'disabled' } }, { peer: true, client: true }).reason).toMatch(/back to plain HTTP is not built/);
  });
});

describe('one member\'s peer URL at a time, just before its restart', () => {
  const members = [member(0, 'http', { leader: true }), member(1, 'http'), member(2, 'http')];
  const restart = (p: MemberPod): UpgradeAction => ({ type: 'deletePod', pod: p, reason: 'outdated', change: 'TLS' });

  it('turns the restart of a member that still advertises http into the update of its URL to https, same host and port', () => {
    const pods = [pod(0, TRUSTING_ARGS), pod(1, TRUSTING_ARGS), pod(2, TRUSTING_ARGS)];
    expect(gateSwitchingRestart(restart(pods[2]), pods, members, FINAL_ARGS)).toEqual({ type: 'updatePeerUrls', id: '1002', pod: 'kv-2', peerUrls: ['https://kv-2.kv-peers:2380'] });
  });

  it('restarts a member whose URL was switched before anything else, leadership moved off it first; only while every other member is healthy', () => {
    const pods = [pod(0, TRUSTING_ARGS), pod(1, TRUSTING_ARGS), pod(2, TRUSTING_ARGS)];
    const switched = [members[0], member(1, 'https'), members[2]];
    // The rolling restart would take kv-2 (the highest follower): kv-1, half away already, goes first.
    expect(gateSwitchingRestart(restart(pods[2]), pods, switched, FINAL_ARGS)).toMatchObject({ type: 'deletePod', pod: { name: 'kv-1' } });
    expect(gateSwitchingRestart(restart(pods[1]), pods, switched, FINAL_ARGS)).toEqual(restart(pods[1]));
    const leaderSwitched = [member(0, 'https', { leader: true }), member(1, 'http'), member(2, 'http')];
    expect(gateSwitchingRestart(undefined, pods, leaderSwitched, FINAL_ARGS)).toMatchObject({ type: 'moveLeader', fromPod: 'kv-0', toPod: 'kv-1' });
    expect(gateSwitchingRestart(restart(pods[2]), pods, [members[0], member(1, 'https'), member(2, 'http', { healthy: false })], FINAL_ARGS)).toBeUndefined();
  });

  it('switches the URL of a member whose pod was restarted out of band onto the final template first (issue 40: else the migration never finished)', () => {
    // kv-1 was deleted by hand while kv-2 was being switched: it came back from the final template, TLS on its peer
    // listener, its URL still http. The rolling restart finds its pod up to date and would restart kv-2 (or nothing).
    const pods = [pod(0, TRUSTING_ARGS), pod(1, FINAL_ARGS), pod(2, TRUSTING_ARGS)];
    for (const action of [restart(pods[2]), restart(pods[0]), undefined]) {
      expect(gateSwitchingRestart(action, pods, members, FINAL_ARGS)).toEqual({ type: 'updatePeerUrls', id: '1001', pod: 'kv-1', peerUrls: ['https://kv-1.kv-peers:2380'] });
    }
    // Once its URL is https it is done: the rest goes on as before.
    const fixed = [members[0], member(1, 'https'), members[2]];
    expect(gateSwitchingRestart(restart(pods[2]), pods, fixed, FINAL_ARGS)).toEqual({ type: 'updatePeerUrls', id: '1002', pod: 'kv-2', peerUrls: ['https://kv-2.kv-peers:2380'] });
  });

  it('leaves the rolling restart as it is for pods that already listen on TLS, and for templates without peer TLS', () => {
    const tlsPods = [pod(0, FINAL_ARGS), pod(1, FINAL_ARGS), pod(2, FINAL_ARGS)];
    const tlsMembers = [member(0, 'https'), member(1, 'https'), member(2, 'https')];
    expect(gateSwitchingRestart(restart(tlsPods[2]), tlsPods, tlsMembers, FINAL_ARGS)).toEqual(restart(tlsPods[2]));
    const plainPods = [pod(0, PLAIN_ARGS), pod(1, PLAIN_ARGS), pod(2, PLAIN_ARGS)];
    expect(gateSwitchingRestart(restart(plainPods[2]), plainPods, members, TRUSTING_ARGS)).toEqual(restart(plainPods[2]));
  });
});
