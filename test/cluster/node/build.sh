#!/usr/bin/env bash
# Builds the parts of a real one-node Kubernetes (issue 33) from the Go module proxy
# into a version-keyed cache directory outside git, beside the control plane's:
#   kubelet                 the same Kubernetes release as the control plane, same
#                           flags, in a copy of the control plane's wrapper module
#                           (./kubelet/go.mod: the kubelet needs modules ../go.mod does
#                           not list, and changing ../go.mod would rebuild the whole
#                           control plane);
#   kube-proxy              the same release, in ./kube-proxy (the kubelet's module, copied,
#                           with the modules kube-proxy needs besides): a Service's
#                           ClusterIP routes (the controller pod's `kubernetes` Service);
#   containerd, ctr, containerd-shim-runc-v2
#                           containerd 2.x, the runtime this kubelet talks CRI to, with
#                           its client (images are imported with `ctr`) and runc shim;
#   bridge, host-local, loopback, portmap
#                           the CNI plugins (github.com/containernetworking/plugins);
#   pause                   the pod sandbox's process (./pause: no registry is reachable
#                           for registry.k8s.io/pause);
#   coredns                 the cluster DNS (member names of a headless Service), with
#                           the plugins it needs only (./coredns: its own module, as
#                           CoreDNS pins k8s.io/* of its own);
# and installs runc, and iptables for kube-proxy, from Debian's packages when they are
# missing (see install_debian).
# containerd and the plugins have their own module (./go.mod): containerd 2.4 pins
# k8s.io/* v0.37, which must not move the control plane's v0.36.
#
# Opt-in: nothing in the kwok test lane calls this script. Idempotent: one stamp
# and one lock per binary (../build-cache.sh's build_stamped, as ../build.sh), a
# second run is a cache hit. The LAST
# line on stdout is the directory holding the binaries (the CNI plugins in its cni/
# subdirectory, the layout the kubelet's and containerd's CNI bin dir expects).
#
# Usage: build.sh [BINARY...]   (no BINARY: all of them, plus runc)
# Environment: as ../build.sh (DKV_CONTROL_PLANE_CACHE, DKV_CONTROL_PLANE_REBUILD=1,
#   DKV_BUILD_PARALLELISM), and DKV_NODE_NO_APT=1 to never run apt-get (then a
#   missing runc or iptables is an error).
set -euo pipefail

here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
cluster="$(cd "$here/.." && pwd)"
source "$cluster/build-cache.sh"   # cache_root, modver, GOTOOLCHAIN=local CGO_ENABLED=0
parallelism="${DKV_BUILD_PARALLELISM:-2}"

log() { printf 'node/build.sh: %s\n' "$*" >&2; }
die() { log "ERROR: $*"; exit 1; }

k8s_version="$(modver k8s.io/kubernetes "$cluster/go.mod")"
for module in kubelet kube-proxy; do
  module_k8s_version="$(modver k8s.io/kubernetes "$here/$module/go.mod")"
  [[ "$k8s_version" == "$module_k8s_version" ]] ||
    die "the $module's k8s.io/kubernetes ($module_k8s_version, $here/$module/go.mod) is not the control plane's ($k8s_version, $cluster/go.mod): copy the new release's require and replace lines there too"
done
containerd_version="$(modver github.com/containerd/containerd/v2)"
cni_version="$(modver github.com/containernetworking/plugins)"
coredns_version="$(modver github.com/coredns/coredns "$here/coredns/go.mod")"
[[ -n "$k8s_version" && -n "$containerd_version" && -n "$cni_version" && -n "$coredns_version" ]] ||
  die "cannot read the k8s.io/kubernetes ($cluster/go.mod), containerd or CNI plugins ($here/go.mod) or CoreDNS ($here/coredns/go.mod) versions"

k8s_minor="${k8s_version#v1.}"; k8s_minor="${k8s_minor%%.*}"
ldflags_k8s="-s -w"
for pkg in k8s.io/component-base/version k8s.io/client-go/pkg/version; do
  ldflags_k8s+=" -X ${pkg}.gitVersion=${k8s_version} -X ${pkg}.gitMajor=1 -X ${pkg}.gitMinor=${k8s_minor} -X ${pkg}.gitTreeState=clean"
done
# containerd's Makefile: version stamped into the binaries, static-build tags, the
# shim without gRPC (it speaks ttrpc).
ldflags_containerd="-s -w -X github.com/containerd/containerd/v2/version.Version=${containerd_version} -X github.com/containerd/containerd/v2/version.Package=github.com/containerd/containerd/v2"
tags_containerd="urfave_cli_no_docs osusergo netgo static_build"
tags_shim="$tags_containerd no_grpc"
ldflags_cni="-s -w -X github.com/containernetworking/plugins/pkg/utils/buildversion.BuildVersion=${cni_version}"
# CoreDNS' Makefile stamps the commit only (coremain.GitCommit); the version is in its source.
ldflags_coredns="-s -w"

cni_plugins=(bridge host-local loopback portmap)
all_binaries=(kubelet kube-proxy containerd containerd-shim-runc-v2 ctr "${cni_plugins[@]}" pause coredns)

if (($# > 0)); then wanted=("$@"); else wanted=("${all_binaries[@]}"); fi
for b in "${wanted[@]}"; do
  [[ " ${all_binaries[*]} " == *" $b "* ]] || die "unknown binary '$b' (known: ${all_binaries[*]})"
done

is_cni() { [[ " ${cni_plugins[*]} " == *" $1 "* ]]; }
# The per-binary cache (build-cache.sh's build_stamped) asks these.
binary_place() { if is_cni "$1"; then echo "cni/$1"; else echo "$1"; fi; }
stamp_versions() { echo "k8s=${k8s_version} containerd=${containerd_version} cni=${cni_version} coredns=${coredns_version}"; }
report_built() { # $1 = binary, $2 = file
  case "$1" in
    kubelet | kube-proxy | containerd) "$2" --version >&2 ;;
    coredns) "$2" -version >&2 ;;
    ctr | containerd-shim-runc-v2) "$2" -v >&2 ;;
    *) ;;
  esac
}

# Everything a binary's build depends on: when it changes, that binary is rebuilt.
recipe_key() { # $1 = binary
  {
    printf 'recipe=1 binary=%s CGO_ENABLED=0 -trimpath\n' "$1"
    case "$1" in
      kubelet | kube-proxy) cat "$here/$1/go.mod" "$here/$1/go.sum"; printf '%s\n' "$ldflags_k8s" ;;
      containerd-shim-runc-v2) cat "$here/go.mod" "$here/go.sum"; printf '%s\n%s\n' "$ldflags_containerd" "$tags_shim" ;;
      containerd | ctr) cat "$here/go.mod" "$here/go.sum"; printf '%s\n%s\n' "$ldflags_containerd" "$tags_containerd" ;;
      pause) cat "$here/go.mod" "$here/pause/main.go" ;;
      coredns) cat "$here/coredns/go.mod" "$here/coredns/go.sum" "$here/coredns/main.go"; printf '%s\n' "$ldflags_coredns" ;;
      *) cat "$here/go.mod" "$here/go.sum"; printf '%s\n' "$ldflags_cni" ;;
    esac
  } | sha256sum | cut -d' ' -f1
}

build_command() { # $1 = binary, $2 = output file: sets cmd and dir
  local gb=(go build -mod=readonly -p "$parallelism" -trimpath)
  case "$1" in
    kubelet | kube-proxy) dir="$here/$1"; cmd=("${gb[@]}" -ldflags "$ldflags_k8s" -o "$2" "k8s.io/kubernetes/cmd/$1") ;;
    containerd | ctr) cmd=("${gb[@]}" -tags "$tags_containerd" -ldflags "$ldflags_containerd" -o "$2" "github.com/containerd/containerd/v2/cmd/$1") ;;
    containerd-shim-runc-v2) cmd=("${gb[@]}" -tags "$tags_shim" -ldflags "$ldflags_containerd" -o "$2" "github.com/containerd/containerd/v2/cmd/$1") ;;
    pause) cmd=("${gb[@]}" -ldflags "-s -w" -o "$2" ./pause) ;;
    coredns) dir="$here/coredns"; cmd=("${gb[@]}" -ldflags "$ldflags_coredns" -o "$2" .) ;;
    host-local) cmd=("${gb[@]}" -ldflags "$ldflags_cni" -o "$2" "github.com/containernetworking/plugins/plugins/ipam/host-local") ;;
    portmap) cmd=("${gb[@]}" -ldflags "$ldflags_cni" -o "$2" "github.com/containernetworking/plugins/plugins/meta/portmap") ;;
    *) cmd=("${gb[@]}" -ldflags "$ldflags_cni" -o "$2" "github.com/containernetworking/plugins/plugins/main/$1") ;;
  esac
}

# runc is Debian's, not built here: runc needs cgo (its nsexec C code runs before
# the Go runtime starts, and seccomp goes through libseccomp), while every build
# here is CGO_ENABLED=0 with the Go toolchain alone; Debian's package is that C
# built and maintained, and CI machines reach Debian's packages like this one.
# iptables (Debian's iptables-nft, for kube-proxy's rules in the node's namespace) likewise:
# userland C around netlink, not a Go module.
install_debian() { # $1 = a command the package gives, $2 = the package
  if command -v "$1" >/dev/null; then return 0; fi
  [[ "${DKV_NODE_NO_APT:-0}" != 1 ]] || die "$1 is not installed and DKV_NODE_NO_APT=1 (apt-get install -y $2)"
  command -v apt-get >/dev/null || die "$1 is not installed and there is no apt-get to install $2"
  log "installing $2 from Debian's packages ..."
  { apt-get install -y --no-install-recommends "$2" || { apt-get update && apt-get install -y --no-install-recommends "$2"; }; } >&2 ||
    die "apt-get install $2 failed"
}

out="$cache_root/node-k8s-${k8s_version}-containerd-${containerd_version}-cni-${cni_version}"

if (($# == 0)); then
  install_debian runc runc
  install_debian iptables-restore iptables
fi

build_stamped "$out" "${wanted[@]}"
