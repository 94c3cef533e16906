/**
 * Clients that differ from a test's own in one respect: another server
 * address (a loopback proxy in front of the API server), or another identity
 * (a service account's token, for RBAC tests).
 */
import type { Connection } from '../../kube/connection.js';
import { KubeClient, resourcePath } from '../../kube/client.js';

/** The same credentials against another server address. */
export function viaServer(client: KubeClient, server: string): KubeClient {
  const connection: Connection = {
    server: server.replace(/\/$/, ''),
    requestOptions: () => client.connection.requestOptions(),
    unauthorized: () => client.connection.unauthorized?.(),
  };
  return new KubeClient(connection);
}

/** A token for a ServiceAccount (TokenRequest), as the kubelet mints one for a pod; `admin` may create it. */
export async function serviceAccountToken(admin: KubeClient, namespace: string, name: string, expirationSeconds = 3600): Promise<string> {
  const request = await admin.request('POST', `${resourcePath('v1', 'ServiceAccount', namespace, name)}/token`, {
    body: { apiVersion: 'authentication.k8s.io/v1', kind: 'TokenRequest', spec: { expirationSeconds } },
  });
  return request.status.token;
}

/** The same server (address and CA), authenticating with a bearer token instead. */
export function withToken(client: KubeClient, token: string): KubeClient {
  return new KubeClient({
    server: client.server,
    requestOptions: async () => {
      const { ca, servername, rejectUnauthorized } = await client.connection.requestOptions();
      return { ca, servername, rejectUnauthorized, headers: { Authorization: `Bearer ${token}` } };
    },
  });
}
