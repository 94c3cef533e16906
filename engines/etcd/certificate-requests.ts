/**
 * What an etcd cluster's two leaf certificates say, whoever signs them (the
 * controller in mode `operator`, engines/etcd/certificates.ts; cert-manager
 * in mode `cert-manager`, constructs/certificates.ts): the names they serve
 * and what they authenticate. Pure: no PKI library, so the constructs can
 * ask it.
 */
import type { GeneratorConfig } from '../../model/generator-config.js';
import type { ClusterIdentity } from '../../model/cluster-identity.js';
import type { LeafRequest } from '../../model/leaf-request.js';
import { memberName } from './peer-urls.js';

/** spec.size's maximum (api/distributedkv.schema.json). */
export const MAX_MEMBERS = 9;

/** A service's names, from the shortest a pod in its namespace resolves to the fully qualified one. */
function qualified(host: string, namespace: string, clusterDomain: string): string[] {
  return [host, `${host}.${namespace}`, `${host}.${namespace}.svc`, `${host}.${namespace}.svc.${clusterDomain}`];
}

/**
 * The members' common name: the one name the peer port accepts (`--peer-cert-allowed-cn`, tls-files.ts). It has a
 * dot, which no client identity's name (a DNS label), the root identity's (none) or the controller's
 * (`dkv-operator`) has, so no certificate but a member's opens the peer port, whatever names it carries.
 */
export const memberCommonName = (identity: Pick<ClusterIdentity, 'statefulSetName'>, namespace: string): string => `${identity.statefulSetName}.${namespace}`;

/** The members' certificate: serves peers and clients, and proves a member to the peer it dials. */
export function memberCertificateRequest(identity: Pick<ClusterIdentity, 'statefulSetName' | 'headlessServiceName' | 'clientServiceName'>, namespace: string, config: Pick<GeneratorConfig, 'clusterDomain'>): LeafRequest {
  const members = Array.from({ length: MAX_MEMBERS }, (_, i) => memberName(identity, i))
    .flatMap((pod) => qualified(`${pod}.${identity.headlessServiceName}`, namespace, config.clusterDomain));
  return {
    commonName: memberCommonName(identity, namespace),
    dnsNames: [...members, ...qualified(identity.clientServiceName, namespace, config.clusterDomain), 'localhost'],
    ipAddresses: ['127.0.0.1', '::1'],
    server: true,
    client: true,
  };
}

/**
 * The client certificate of the controller (membership and maintenance
 * calls), the backup runner and the restore: it authenticates a client and
 * serves nothing. Its common name is what etcd would take as the user name
 * once authentication is on (client identities, not built yet).
 */
export const CLIENT_CERTIFICATE_REQUEST: LeafRequest = { commonName: 'dkv-operator', dnsNames: [], ipAddresses: [], server: false, client: true };
