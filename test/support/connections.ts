/**
 * Clients that differ from a test's own in one respect: another server
 * address (a loopback proxy in front of the API server), or another identity
 * (a service account's token, for RBAC tests).
 */
import type { Connection } from '../../kube/connection.js';
import { KubeClient } from '../../kube/client.js';

/** The same credentials against another server address. */
export function viaServer(client: KubeClient, server: string): KubeClient {
  const connection: Connection = {
    server: server.replace(/\/$/, ''),
    requestOptions: () => client.connection.requestOptions(),
    unauthorized: () => client.connection.unauthorized?.(),
  };
  return new KubeClient(connection);
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
