/**
 * The real node's cluster DNS (issue 33): CoreDNS (test/cluster/node/coredns,
 * the `kubernetes` plugin) answering for the cluster domain from the API
 * server, so that a member's peer URL `https://kv-1.kv-peers:2380` resolves
 * the way it does on any cluster: the pod's resolv.conf (written by the
 * kubelet from its clusterDNS and clusterDomain) searches
 * `<namespace>.svc.<domain>`, and CoreDNS answers
 * `kv-1.kv-peers.<namespace>.svc.<domain>` from the headless Service's
 * EndpointSlices (kube-controller-manager writes each pod's hostname there).
 *
 * It runs as a process inside the node's network namespace, on the node's
 * own address: no kube-proxy turns a Service IP into it, and pods reach the
 * node's address through their bridge's gateway. Nothing else is served: no
 * `forward`, so a name outside the cluster domain is refused, never sent to a
 * resolver beyond this machine.
 */
import type { ChildProcess } from 'node:child_process';
import { writeFileSync } from 'node:fs';
import { join } from 'node:path';

export interface ClusterDnsOptions {
  /** The CoreDNS binary (node/build.sh's `coredns`). */
  readonly binary: string;
  /** Where its Corefile and log go. */
  readonly dir: string;
  /** Its credentials for the API server. */
  readonly kubeconfigPath: string;
  /** The address it serves on (the node's). */
  readonly address: string;
  /** The port of its /ready endpoint, on 127.0.0.1 where it runs. */
  readonly readyPort: number;
  /** @default 'cluster.local' */
  readonly domain?: string;
  /** Starts the process where it must run (the node's network namespace). */
  readonly launch: (binary: string, args: string[], logFile: string) => ChildProcess;
}

/** The Corefile: one server block for the cluster domain, records from the API server, a short TTL (members come and go in a test). */
export function corefile(o: { address: string; readyPort: number; domain: string; kubeconfigPath: string }): string {
  return `${o.domain}:53 {
    bind ${o.address}
    errors
    ready 127.0.0.1:${o.readyPort}
    kubernetes ${o.domain} {
        kubeconfig ${o.kubeconfigPath}
        ttl 1
    }
}
`;
}

export interface ClusterDns {
  readonly process: ChildProcess;
  readonly logFile: string;
  readonly domain: string;
}

export function startClusterDns(o: ClusterDnsOptions): ClusterDns {
  const domain = o.domain ?? 'cluster.local';
  const file = join(o.dir, 'Corefile');
  writeFileSync(file, corefile({ address: o.address, readyPort: o.readyPort, domain, kubeconfigPath: o.kubeconfigPath }));
  const logFile = join(o.dir, 'coredns.log');
  return { process: o.launch(o.binary, ['-conf', file], logFile), logFile, domain };
}
