/**
 * The real node's two configuration files (real-node.ts writes them into the
 * node's temp dir): containerd's config.toml and the KubeletConfiguration.
 * What each setting is for on this kernel and sandbox is in
 * test/cluster/README.md "How the node runs" and "The record".
 */

/** containerd 2.x, config version 3: everything under `dir`, runc via its shim, the CNI config in `dir`/cni. */
export function containerdConfig(dir: string, binDir: string, sandboxImage: string): string {
  return `version = 3
root = "${dir}/containerd/root"
state = "${dir}/containerd/state"
# Nothing that would reach outside the dir or the machine: no tracing exporter, no NRI socket in /var/run.
disabled_plugins = ["io.containerd.snapshotter.v1.btrfs", "io.containerd.snapshotter.v1.zfs", "io.containerd.snapshotter.v1.devmapper", "io.containerd.snapshotter.v1.erofs", "io.containerd.nri.v1.nri", "io.containerd.tracing.processor.v1.otlp", "io.containerd.internal.v1.tracing"]
[grpc]
  address = "${dir}/containerd.sock"
[ttrpc]
  address = "${dir}/containerd.sock.ttrpc"
[plugins]
  [plugins.'io.containerd.internal.v1.opt']
    path = "${dir}/containerd/opt"
  [plugins.'io.containerd.cri.v1.images']
    snapshotter = "overlayfs"
    [plugins.'io.containerd.cri.v1.images'.pinned_images]
      sandbox = "${sandboxImage}"
  [plugins.'io.containerd.cri.v1.runtime']
    # No CAP_SYS_RESOURCE here: runc cannot lower oom_score_adj (the sandbox's -998,
    # a Guaranteed pod's -997); this keeps every score at or above containerd's own.
    restrict_oom_score_adj = true
    # Pods' network namespaces under the state dir (unmounted by stop()), not /var/run/netns.
    netns_mounts_under_state_dir = true
    [plugins.'io.containerd.cri.v1.runtime'.containerd]
      default_runtime_name = "runc"
      [plugins.'io.containerd.cri.v1.runtime'.containerd.runtimes.runc]
        runtime_type = "io.containerd.runc.v2"
        [plugins.'io.containerd.cri.v1.runtime'.containerd.runtimes.runc.options]
          BinaryName = "runc"
          # runc's state, else /run/containerd/runc on the host.
          Root = "${dir}/runc"
          SystemdCgroup = false
    [plugins.'io.containerd.cri.v1.runtime'.cni]
      bin_dirs = ["${binDir}/cni"]
      conf_dir = "${dir}/cni"
  [plugins.'io.containerd.grpc.v1.cri']
    stream_server_address = "127.0.0.1"
    stream_server_port = "0"
`;
}

/** The kubelet's: cgroup v1 with cgroupfs, its ports on loopback, x509 against the plane's CA, no eviction or image GC; with `dns`, the cluster DNS for pods. */
export function kubeletConfig(o: { dir: string; pki: string; port: number; healthzPort: number; cgroupRoot: string; dns?: { address: string; domain: string } }): string {
  // With a cluster DNS, pods resolve through it alone: no search domain or resolver of the host's reaches their resolv.conf.
  const dns = o.dns ? `clusterDNS: [${o.dns.address}]\nclusterDomain: ${o.dns.domain}\nresolvConf: ""` : 'resolvConf: /etc/resolv.conf';
  return `apiVersion: kubelet.config.k8s.io/v1beta1
kind: KubeletConfiguration
# This kernel mounts cgroup v1 hierarchies; a 1.35+ kubelet refuses them unless told.
failCgroupV1: false
cgroupDriver: cgroupfs
cgroupRoot: ${o.cgroupRoot}
failSwapOn: false
address: 127.0.0.1
port: ${o.port}
readOnlyPort: 0
healthzBindAddress: 127.0.0.1
healthzPort: ${o.healthzPort}
containerRuntimeEndpoint: unix://${o.dir}/containerd.sock
podLogsDir: ${o.dir}/pod-logs
volumePluginDir: ${o.dir}/volume-plugins
staticPodPath: ""
authentication:
  anonymous: {enabled: false}
  webhook: {enabled: false}
  x509: {clientCAFile: ${o.pki}/ca.crt}
authorization: {mode: AlwaysAllow}
# A shared disk may be fuller than the defaults allow: never evict, never collect images.
evictionHard: {memory.available: "1Mi", nodefs.available: "0%", imagefs.available: "0%", nodefs.inodesFree: "0%"}
imageGCHighThresholdPercent: 100
imageGCLowThresholdPercent: 99
${dns}
serializeImagePulls: false
`;
}
