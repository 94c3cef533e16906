/**
 * Moving a running plain-HTTP etcd cluster to TLS without losing its quorum
 * (docs/security.md, "Clusters created before TLS"), started only when the
 * spec asks for it explicitly (`spec.tls.mode: operator`). Pure: from the
 * live pod template's arguments, the StatefulSet's rollout and the members'
 * peer URLs (the membership API), the template to render next and, while
 * peers switch, the one membership call to make before a restart.
 *
 * What etcd does that the order rests on (etcd v3.6 source, checked on the
 * 3.6.8 binary by test/engines/tls-migration-etcd.test.ts):
 *
 * - a member dials a peer with the scheme of the URL that peer advertises in
 *   the membership, presenting its own `--peer-cert-file` whatever its own
 *   listener's scheme (server/etcdserver/server.go: the peer transport's
 *   TLSInfo is cfg.PeerTLSInfo; embed/etcd.go only warns that an http
 *   listener ignores the files). So every member must carry the certificate
 *   before the first peer advertises https, and a member's listener must
 *   speak the scheme of its own advertised URL; a member needs no plain
 *   listener beside its TLS one: who dials it over plain HTTP follows its
 *   URL, which changes in the same step as its listener;
 * - each member receives a peer's messages on a stream it dialed itself
 *   (rafthttp/stream.go, streamReader.dial), and a member update only
 *   changes where new dials go (rafthttp/peer.go, peer.update): between the
 *   update of a member's URL and its restart with the TLS listener, its
 *   established streams keep going; new dials to it fail, as they would
 *   while it restarts. One member at a time is that member's restart;
 * - one client address may serve plain HTTP and TLS together: listen URLs
 *   with the same host and port share one listener, multiplexed
 *   (embed/etcd.go, configureClientListeners: secure and insecure on one
 *   serve context). The clients' grace period is that: https and plain HTTP
 *   both on the client port, so no client changes its address twice.
 *
 * Phases: `WaitingForNetworkPolicy` (a move of the client port does not
 * start while nothing but the migration stands between the network and a
 * client port that serves plain HTTP to anyone for the grace: no
 * NetworkPolicy of the cluster, and no acknowledgement in the spec,
 * spec.tls.migrateWithoutNetworkPolicy; anyone who reaches it may snapshot,
 * write or add a member), `Issuing` (the Secrets, before any template mounts them),
 * `Trusting` (a rolling restart onto the certificates: peer listener still
 * plain, client port plain and TLS), `ClientGrace` (clients move to https;
 * config tls.plainClientGraceSeconds), `Switching` (per member: its peer URL
 * updated to https through the membership, then its restart onto the final
 * template, TLS only, one member at a time, the leader last). Two restarts
 * per member in all. The restarts are the rolling upgrade's (upgrade.ts):
 * one pod at a time, only while every other member is healthy.
 */
import type { MemberStatus } from '../membership.js';
import type { TlsInEffect } from '../../model/tls.js';
import type { MemberPod, UpgradeAction } from './upgrade.js';

export type TlsMigrationPhase = 'WaitingForNetworkPolicy' | 'Issuing' | 'Trusting' | 'ClientGrace' | 'Switching';

/** A template's listeners as its arguments say (the scheme each serves, and a transition's extras). */
export type TemplateTls = Pick<TlsInEffect, 'peer' | 'client' | 'transition'>;

/** `--listen-client-urls`: plain HTTP first during the grace period (readers that take the first scheme see the plain listener it still is). */
export function clientListener(tls: TemplateTls, port: number): string {
  if (tls.transition?.plainClients) return `http://0.0.0.0:${port},https://0.0.0.0:${port}`;
  return `${tls.client ? 'https' : 'http'}://0.0.0.0:${port}`;
}

/** `--advertise-client-urls`: both during the grace period, https first (a client that syncs its endpoints finds the TLS one). */
export function advertisedClientUrls(tls: TemplateTls, url: (secure: boolean) => string): string {
  return tls.transition?.plainClients ? `${url(true)},${url(false)}` : url(tls.client);
}

/** What a member template's arguments run (listen URLs and certificate files). */
export function templateTls(args: readonly string[]): TemplateTls | undefined {
  const schemes = (flag: string) => args.find((a) => a.startsWith(`--${flag}=`))?.slice(flag.length + 3).split(',').map((u) => u.split(':')[0]);
  const peer = schemes('listen-peer-urls');
  const client = schemes('listen-client-urls');
  if (!peer || !client) return undefined;
  const peerTls = peer.includes('https');
  const plainClients = client.includes('http') && client.includes('https');
  const peerCertificates = !peerTls && args.some((a) => a.startsWith('--peer-cert-file='));
  return {
    peer: peerTls, client: client.includes('https'),
    ...(plainClients || peerCertificates ? { transition: { peerCertificates, plainClients } } : {}),
  };
}

export interface TlsMigrationInput {
  /** What the spec asks (model/tls.ts tlsAsked). */
  readonly asked: TlsInEffect;
  /** The spec says `tls.mode: operator` itself: a running cluster is never moved by a default. */
  readonly explicit: boolean;
  /** The live template's listeners; undefined without a StatefulSet (a new cluster: no migration). */
  readonly live: TemplateTls | undefined;
  /** Every pod runs the live template (the StatefulSet's rollout is complete). */
  readonly rolledOut: boolean;
  /** The members' Secrets existed before this reconcile (tls-step.ts issued them, the cache holds them) and the controller can use them. */
  readonly certificatesIssued: boolean;
  /** The members as the membership API lists them, when it answered. */
  readonly members?: readonly MemberStatus[];
  /**
   * A NetworkPolicy of the cluster restricts who reaches its members (it exists: the controller applied it, or a GitOps
   * tool from `dkv synth`), or the spec accepts the open client port (spec.tls.migrateWithoutNetworkPolicy). Without
   * either, a migration that moves the client port does not start; one under way goes on whatever happens to the policy.
   */
  readonly guarded: boolean;
  /** When the grace period began (status.tls.migration.plainClientsSince), if it did. */
  readonly plainClientsSince?: string;
  readonly clientGraceMs: number;
  readonly now: number;
}

export interface TlsMigrationStep {
  /** The template to render. */
  readonly render: TlsInEffect;
  /** How the controller reaches the members now: https only once every member serves it. */
  readonly reach: TlsInEffect;
  readonly phase: TlsMigrationPhase;
  readonly message: string;
  /** Members whose peer URL is https (the Switching phase's progress). */
  readonly membersDone: readonly string[];
  readonly plainClientsSince?: string;
  readonly plainClientsUntil?: string;
  readonly requeueAfterMs?: number;
}

const SOON_MS = 2_000;
/** How often a migration waiting for a NetworkPolicy looks again (the policy's arrival is also a watched change). */
const WAIT_MS = 30_000;
const isHttps = (m: MemberStatus) => m.peerUrls.length > 0 && m.peerUrls.every((u) => u.startsWith('https:'));

/** The next step of a migration to TLS, or undefined when none is under way or asked for (model/tls.ts decides then). */
export function decideTlsMigration(input: TlsMigrationInput): TlsMigrationStep | undefined {
  const { asked, live } = input;
  if (!live || asked.mode !== 'operator') return undefined;
  const inTransition = live.transition !== undefined;
  const peerMove = asked.peer && !live.peer;
  const clientMove = asked.client && (!live.client || Boolean(live.transition?.plainClients));
  const urlsPlain = (input.members ?? []).filter((m) => !isHttps(m));
  // The final template is applied while some members still advertise plain peer URLs (a client-only migration ends when
  // it is applied: the rest is an ordinary rolling restart, which status.upgrade reports).
  const switching = !inTransition && live.peer && asked.peer && live.client === asked.client && urlsPlain.length > 0;
  if (!peerMove && !clientMove && !switching) return undefined;
  if (!input.explicit && !inTransition && !switching) return undefined;

  if (!inTransition && !switching && clientMove && !input.guarded) {
    const current: TlsInEffect = { mode: 'operator', ...live };
    return {
      render: current, reach: { mode: 'operator', peer: live.peer, client: live.client }, membersDone: [], phase: 'WaitingForNetworkPolicy', requeueAfterMs: WAIT_MS,
      message: 'not started: for the clients\' grace period the client port would serve plain HTTP beside TLS to anyone who reaches it, and no NetworkPolicy of the cluster restricts who does. '
        + 'Set spec.networkPolicy.enabled: true (listing the clients of other namespaces in spec.networkPolicy.clients), or accept the open port with spec.tls.migrateWithoutNetworkPolicy: true (docs/security.md, "Clusters created before TLS")',
    };
  }
  const final: TlsInEffect = { mode: 'operator', peer: asked.peer, client: asked.client };
  const trusting: TlsInEffect = {
    mode: 'operator', peer: live.peer, client: live.client || clientMove,
    transition: { peerCertificates: peerMove, plainClients: clientMove },
  };
  const current: TlsInEffect = { mode: 'operator', ...live };
  // Members are called over https once every one of them serves it: a grace-period template rolled out, or the final one applied.
  const servesTls = (inTransition && live.client && input.rolledOut) || switching;
  const reach: TlsInEffect = { mode: 'operator', peer: live.peer, client: servesTls ? live.client : false };
  const done = (input.members ?? []).filter(isHttps).map((m) => m.name || m.id);
  const base = { reach, membersDone: asked.peer ? done : [] };

  if (switching) {
    return { ...base, render: final, reach: { ...reach, client: asked.client }, phase: 'Switching', requeueAfterMs: SOON_MS, message: asked.peer
      ? `switching members to TLS one at a time: ${done.length} of ${input.members?.length ?? '?'} peer URLs on https`
      : 'restarting members onto TLS only on the client port' };
  }
  if (!input.certificatesIssued) {
    return { ...base, render: current, phase: 'Issuing', requeueAfterMs: SOON_MS, message: 'issuing the certificates (or waiting for usable ones) before a member mounts them' };
  }
  if (!inTransition || !input.rolledOut) {
    return { ...base, render: trusting, phase: 'Trusting', requeueAfterMs: SOON_MS, message: `restarting members one at a time with the certificates${peerMove ? ' (peer listeners stay plain HTTP)' : ''}${clientMove ? ', the client port serving TLS beside plain HTTP' : ''}` };
  }
  if (live.transition?.plainClients) {
    const since = input.plainClientsSince ?? new Date(input.now).toISOString();
    const until = Date.parse(since) + input.clientGraceMs;
    if (input.now < until) {
      return {
        ...base, render: current, phase: 'ClientGrace', plainClientsSince: since, plainClientsUntil: new Date(until).toISOString(),
        requeueAfterMs: Math.max(1_000, until - input.now),
        message: `every member serves TLS and plain HTTP on the client port: clients move to https with a client certificate until ${new Date(until).toISOString()}, when plain HTTP is dropped`,
      };
    }
  }
  return { ...base, render: final, phase: 'Switching', requeueAfterMs: SOON_MS, message: 'applying the TLS-only template' };
}

/** The one change a Switching restart needs first, or what it restarts instead. */
export type SwitchingAction =
  | { readonly type: 'updatePeerUrls'; readonly id: string; readonly pod: string; readonly peerUrls: readonly string[] }
  | UpgradeAction;

/**
 * The Switching phase's gate on the rolling restart's next action
 * (upgrade.ts decided it from the pods and the membership), when the target
 * template's peer listener uses TLS: a member's peer URL goes to https just
 * before its pod is restarted, never two members' at once. A member whose
 * URL was switched but whose pod still listens plain is restarted before
 * anything else (leadership moved off it first, every other member
 * healthy); a restart of a member still advertising http becomes the update
 * of its URL (same host and port, https), and its restart follows on the
 * next reconcile. Members of pods that already listen on TLS are left to
 * the rolling restart as it is, but one that still advertises http (its pod
 * restarted out of band from the final template) has its URL switched
 * before anything else.
 */
export function gateSwitchingRestart(action: UpgradeAction | undefined, pods: readonly MemberPod[], members: readonly MemberStatus[], targetArgs: readonly string[]): SwitchingAction | undefined {
  if (!templateTls(targetArgs)?.peer) return action;
  const memberOf = (pod: string) => members.find((m) => m.name === pod);
  const listensPlain = (p: MemberPod) => templateTls(p.args)?.peer === false;
  const httpsUrls = (m: MemberStatus) => m.peerUrls.map((u) => u.replace(/^http:/, 'https:'));
  // A pod restarted out of band (deleted by hand, its node gone) came back from the final template: it listens on TLS
  // while its URL still says http. Its peers' dials to it fail, so its acknowledgements no longer reach the leader,
  // though it still hears the leader on the streams it dialed and looks healthy: restarting another member now could
  // cost the quorum, and the rolling restart, which finds the pod up to date, would never switch its URL. Its URL
  // first: that only points its peers at the listener it has.
  const advertisesHttp = (m: MemberStatus | undefined) => m !== undefined && m.peerUrls.some((u) => u.startsWith('http:'));
  const listensTlsUnderHttp = pods.find((p) => templateTls(p.args)?.peer === true && !p.deleting && advertisesHttp(memberOf(p.name)));
  if (listensTlsUnderHttp) {
    const member = memberOf(listensTlsUnderHttp.name)!;
    return { type: 'updatePeerUrls', id: member.id, pod: member.name, peerUrls: httpsUrls(member) };
  }
  const pending = pods.find((p) => listensPlain(p) && !p.deleting && memberOf(p.name) !== undefined && isHttps(memberOf(p.name)!));
  if (pending) {
    if (action?.type === 'deletePod' && action.pod.name === pending.name) return action;
    const voters = members.filter((m) => !m.learner);
    const others = voters.filter((m) => m.name !== pending.name);
    // Every other member healthy, as for any restart: this one is half away already (new dials to it fail).
    if (others.some((m) => !m.healthy)) return undefined;
    if (memberOf(pending.name)!.leader) {
      const successor = others.find((m) => m.healthy);
      return successor ? { type: 'moveLeader', fromPod: pending.name, toId: successor.id, toPod: successor.name } : undefined;
    }
    return { type: 'deletePod', pod: pending, reason: 'its peer URL was switched to https', change: 'TLS on its peer listener' };
  }
  if (action?.type !== 'deletePod' || !listensPlain(action.pod)) return action;
  const member = memberOf(action.pod.name);
  if (!member || isHttps(member)) return action;
  return { type: 'updatePeerUrls', id: member.id, pod: member.name, peerUrls: httpsUrls(member) };
}
