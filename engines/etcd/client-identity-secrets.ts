/**
 * The names of a cluster's client-identity Secrets (spec.clients,
 * docs/client-identities.md), from the configuration: what the generator
 * mounts (the backup runner mounts the root identity's) and what the
 * controller issues (client-certificates.ts says what they hold).
 */
import type { GeneratorConfig } from '../../model/generator-config.js';
import type { ClusterIdentity } from '../../model/cluster-identity.js';

/** Every client Secret carries this label, naming its client: a removed client's Secret is found by it (and the cluster's labels). */
export const CLIENT_LABEL = 'dkv.example.com/client';

/** A client's Secret: config.clients.secret with `{name}` the cluster's and `{client}` the client's. */
export function clientSecretName(config: Pick<GeneratorConfig, 'clients'>, identity: Pick<ClusterIdentity, 'name'>, client: string): string {
  return config.clients.secret.replaceAll('{name}', identity.name).replaceAll('{client}', client);
}

/** The root identity's Secret (config.clients.rootSecret). */
export function rootSecretName(config: Pick<GeneratorConfig, 'clients'>, identity: Pick<ClusterIdentity, 'name'>): string {
  return config.clients.rootSecret.replaceAll('{name}', identity.name);
}
