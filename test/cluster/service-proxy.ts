/**
 * The real node's Service proxy (issue 33): kube-proxy of the control plane's
 * release (test/cluster/node/kube-proxy), in iptables mode, inside the node's
 * network namespace, so that a Service's ClusterIP routes as on any cluster.
 * What needs it: a pod that talks to the API server the way every in-cluster
 * client does, at KUBERNETES_SERVICE_HOST (the `kubernetes` Service's
 * ClusterIP) with its projected ServiceAccount token: the controller's pod.
 *
 * The rules live in the node's namespace only (iptables-nft, Debian's, from
 * node/build.sh): nothing on the host changes. kube-proxy is kept from the
 * host-wide settings it would otherwise write: no conntrack table size or
 * timeouts (maxPerCore 0, timeouts 0 mean "leave as is"), no oom_score_adj
 * (this root has no CAP_SYS_RESOURCE), no route_localnet for localhost node
 * ports.
 *
 * The `kubernetes` Service has no endpoints here (the test API server runs
 * with --endpoint-reconciler-type=none and listens on the host's loopback):
 * `kubernetesEndpointSlice` names the node's relay to it, on the node's own
 * address (real-node.ts), as the API server's endpoint.
 */
import type { ChildProcess } from 'node:child_process';
import { writeFileSync } from 'node:fs';
import { join } from 'node:path';

export interface ServiceProxyOptions {
  /** The kube-proxy binary (node/build.sh's `kube-proxy`). */
  readonly binary: string;
  /** Where its configuration and log go (the node's dir). */
  readonly dir: string;
  readonly kubeconfigPath: string;
  /** The Node's name: kube-proxy serves the node's own view (hostnameOverride). */
  readonly nodeName: string;
  /** The pods' range: traffic from outside it to a Service is masqueraded. */
  readonly clusterCidr: string;
  /** Its /healthz and /metrics ports, on 127.0.0.1 where it runs. */
  readonly healthzPort: number;
  readonly metricsPort: number;
  /** Starts the process where it must run (the node's network namespace), with iptables on its PATH. */
  readonly launch: (binary: string, args: string[], logFile: string) => ChildProcess;
}

/** KubeProxyConfiguration: iptables mode, nothing host-wide touched (see the file's comment). */
export function kubeProxyConfig(o: Omit<ServiceProxyOptions, 'binary' | 'dir' | 'launch'>): string {
  return `apiVersion: kubeproxy.config.k8s.io/v1alpha1
kind: KubeProxyConfiguration
clientConnection:
  kubeconfig: ${JSON.stringify(o.kubeconfigPath)}
hostnameOverride: ${o.nodeName}
mode: iptables
clusterCIDR: ${o.clusterCidr}
detectLocalMode: ClusterCIDR
healthzBindAddress: 127.0.0.1:${o.healthzPort}
metricsBindAddress: 127.0.0.1:${o.metricsPort}
oomScoreAdj: 0
conntrack:
  maxPerCore: 0
  min: 0
  tcpEstablishedTimeout: 0s
  tcpCloseWaitTimeout: 0s
iptables:
  localhostNodePorts: false
# NodePorts on the node's own address only (else every address in its namespace, the bridge's gateway included).
nodePortAddresses: [primary]
`;
}

export interface ServiceProxy {
  readonly process: ChildProcess;
  readonly logFile: string;
}

export function startServiceProxy(o: ServiceProxyOptions): ServiceProxy {
  const file = join(o.dir, 'kube-proxy.yaml');
  writeFileSync(file, kubeProxyConfig(o));
  const logFile = join(o.dir, 'kube-proxy.log');
  return { process: o.launch(o.binary, [`--config=${file}`, '--v=1'], logFile), logFile };
}

/** The `kubernetes` Service's endpoint: the API server (through the node's relay) at `address`:`port`. */
export function kubernetesEndpointSlice(address: string, port: number): Record<string, unknown> {
  return {
    apiVersion: 'discovery.k8s.io/v1',
    kind: 'EndpointSlice',
    metadata: {
      name: 'kubernetes',
      namespace: 'default',
      // Not the endpointslice controllers' (which would replace it): the Service has no selector, and the API server writes no endpoints here.
      labels: { 'kubernetes.io/service-name': 'kubernetes', 'endpointslice.kubernetes.io/managed-by': 'real-node.dkv.example.com' },
    },
    addressType: 'IPv4',
    endpoints: [{ addresses: [address], conditions: { ready: true } }],
    ports: [{ name: 'https', port, protocol: 'TCP' }],
  };
}
