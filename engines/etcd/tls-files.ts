/**
 * Where an etcd member and the clients the generator runs (the backup
 * runner) find their certificates: Secrets the controller issues
 * (config.tls, docs/security.md), mounted read-only, each in the shape
 * cert-manager writes too (tls.crt, tls.key, ca.crt), and the arguments that
 * turn TLS with client-certificate authentication on for each listener.
 */
import type { k8s } from 'cdk8s-plus-27';
import type { GeneratorConfig } from '../../model/generator-config.js';
import type { ClusterIdentity } from '../../model/cluster-identity.js';
import type { LiveTls, TlsInEffect } from '../../model/tls.js';
import { memberCommonName } from './certificate-requests.js';
import { NAMESPACE } from './member-settings.js';

/** The members' certificate (serving and peer-client), mounted in every member. */
export const MEMBER_TLS_DIR = '/etc/dkv/tls/member';
/** The client certificate, mounted in the backup runner. */
export const CLIENT_TLS_DIR = '/etc/dkv/tls/client';

/** The member Secret's key with the CRL the members read on every connection (DER: etcd reads no PEM there). */
export const REVOCATION_LIST_KEY = 'crl.der';

const MEMBER_VOLUME = 'member-tls';
const CLIENT_VOLUME = 'client-tls';

/** A Secret's name for this cluster, from a `{name}` template of config.tls. */
export function tlsSecretName(template: string, identity: Pick<ClusterIdentity, 'name'>): string {
  return template.replaceAll('{name}', identity.name);
}

/** The names of a cluster's three TLS Secrets. */
export function tlsSecretNames(config: Pick<GeneratorConfig, 'tls'>, identity: Pick<ClusterIdentity, 'name'>): { authority: string; member: string; client: string } {
  return {
    authority: tlsSecretName(config.tls.authoritySecret, identity),
    member: tlsSecretName(config.tls.memberSecret, identity),
    client: tlsSecretName(config.tls.clientSecret, identity),
  };
}

// 0440 (owner and group read): the members run as a non-root user whose group is the pod's fsGroup.
const secretVolume = (volume: string, secretName: string): k8s.Volume => ({ name: volume, secret: { secretName, defaultMode: 0o440 } });

/** etcd's TLS arguments, the member Secret's volume and its mount; none for a listener without TLS. */
export function memberTls(tls: TlsInEffect, config: Pick<GeneratorConfig, 'tls'>, identity: Pick<ClusterIdentity, 'name' | 'statefulSetName'>): { args: string[]; volumes: k8s.Volume[]; volumeMounts: k8s.VolumeMount[] } {
  // A member on its way to TLS carries the peer certificate before its own listener uses it: it dials peers that advertise https (tls-migration.ts).
  const peer = tls.peer || Boolean(tls.transition?.peerCertificates);
  if (!peer && !tls.client) return { args: [], volumes: [], volumeMounts: [] };
  const file = (name: string) => `${MEMBER_TLS_DIR}/${name}`;
  // The controller keeps a CRL in the member Secret it issues, read by etcd on every connection: how a
  // retired issuing CA is refused without a restart (certificate-rotation.ts). Other providers write none.
  const revocable = tls.mode === 'operator';
  return {
    args: [
      ...(tls.client ? [
        `--cert-file=${file('tls.crt')}`, `--key-file=${file('tls.key')}`,
        '--client-cert-auth', `--trusted-ca-file=${file('ca.crt')}`,
        ...(revocable ? [`--client-crl-file=${file(REVOCATION_LIST_KEY)}`] : []),
      ] : []),
      ...(peer ? [
        `--peer-cert-file=${file('tls.crt')}`, `--peer-key-file=${file('tls.key')}`,
        '--peer-client-cert-auth', `--peer-trusted-ca-file=${file('ca.crt')}`,
        ...(revocable ? [`--peer-crl-file=${file(REVOCATION_LIST_KEY)}`] : []),
        // The peer port for members alone: client identities' certificates come from the same CA, and one that
        // carries its host's names passes etcd's check of the remote address (docs/security.md, "The peer port").
        ...(tls.peer ? [`--peer-cert-allowed-cn=${memberCommonName(identity, NAMESPACE)}`] : []),
      ] : []),
    ],
    volumes: [secretVolume(MEMBER_VOLUME, tlsSecretNames(config, identity).member)],
    volumeMounts: [{ name: MEMBER_VOLUME, mountPath: MEMBER_TLS_DIR, readOnly: true }],
  };
}

/** What a client container (the backup runner) needs to call members over TLS: the client Secret (or `secretName`) mounted, and where its files are. */
export function clientTls(
  tls: TlsInEffect, config: Pick<GeneratorConfig, 'tls'>, identity: Pick<ClusterIdentity, 'name'>, secretName = tlsSecretNames(config, identity).client,
): { env: k8s.EnvVar[]; volumes: k8s.Volume[]; volumeMounts: k8s.VolumeMount[] } {
  if (!tls.client) return { env: [], volumes: [], volumeMounts: [] };
  return {
    env: [{ name: 'DKV_TLS_DIR', value: CLIENT_TLS_DIR }],
    volumes: [secretVolume(CLIENT_VOLUME, secretName)],
    volumeMounts: [{ name: CLIENT_VOLUME, mountPath: CLIENT_TLS_DIR, readOnly: true }],
  };
}

/**
 * The schemes the members of a live StatefulSet run, from their container's
 * listen arguments; undefined for a StatefulSet that is not an etcd member
 * set this generator wrote.
 */
export function liveTlsOf(statefulSet: Readonly<Record<string, unknown>> | undefined): LiveTls | undefined {
  const containers = (statefulSet?.spec as { template?: { spec?: { containers?: { args?: string[] }[] } } } | undefined)?.template?.spec?.containers;
  const args = containers?.[0]?.args;
  if (!args) return undefined;
  const scheme = (flag: string) => args.find((a) => a.startsWith(`--${flag}=`))?.slice(flag.length + 3).split(':')[0];
  const peer = scheme('listen-peer-urls');
  const client = scheme('listen-client-urls');
  if (!peer || !client) return undefined;
  return { peer: peer === 'https', client: client === 'https' };
}
