#!/usr/bin/env bash
# Builds a local Kubernetes control plane (kube-apiserver + etcd), the components
# of the optional "with nodes" mode (kube-controller-manager, kube-scheduler, kwok),
# kubectl and the dkv-pki helper from the Go module proxy into a version-keyed cache
# directory outside git. Idempotent: a second run is a cache hit. The LAST line on
# stdout is always the directory holding the binaries (usable as KUBEBUILDER_ASSETS).
# Progress and notes go to stderr. See README.md.
#
# Usage: build.sh [BINARY...]   (no BINARY: all of them)
#   BINARY: etcd kube-apiserver dkv-pki (what every control plane runs),
#           kube-controller-manager kube-scheduler kwok (the "with nodes" mode; kwok
#           comes with kwok-stages/), kubectl
# Each binary is cached on its own (a stamp per binary in .stamps/), so a run that
# needs only the core builds only the core, and a later run builds only what is
# missing. Runs that overlap (a background build, a test waiting for one of its
# binaries) build each binary once: one waits for the other's build of it.
#
# Environment:
#   DKV_CONTROL_PLANE_CACHE  cache root (default: $HOME/.cache/dkv-control-plane)
#   DKV_CONTROL_PLANE_REBUILD=1  ignore the stamp and rebuild
#   DKV_BUILD_PARALLELISM    go build -p (default 2; use 1 on machines with < 6 GiB RAM)
#   KUBEBUILDER_ASSETS       dir with kube-apiserver and etcd: skip building them
#   TEST_ASSET_KUBE_APISERVER + TEST_ASSET_ETCD  binary paths: skip building them
#   (with external binaries nothing else is built either: the "with nodes" mode then
#   needs kube-controller-manager, kube-scheduler and kwok in that same directory)
set -euo pipefail

here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
source "$here/build-cache.sh"   # cache_root, modver, the local Go toolchain
parallelism="${DKV_BUILD_PARALLELISM:-2}"

log() { printf 'build.sh: %s\n' "$*" >&2; }
die() { log "ERROR: $*"; exit 1; }
k8s_version="$(modver k8s.io/kubernetes)"
etcd_version="$(modver go.etcd.io/etcd/server/v3)"
kwok_version="$(modver sigs.k8s.io/kwok "$here/kwok/go.mod")"
[[ -n "$k8s_version" && -n "$etcd_version" ]] || die "cannot read k8s.io/kubernetes / etcd versions from $here/go.mod"
[[ -n "$kwok_version" ]] || die "cannot read the sigs.k8s.io/kwok version from $here/kwok/go.mod"

k8s_minor="${k8s_version#v1.}"; k8s_minor="${k8s_minor%%.*}"
ldflags_k8s="-s -w"
for pkg in k8s.io/component-base/version k8s.io/client-go/pkg/version; do
  ldflags_k8s+=" -X ${pkg}.gitVersion=${k8s_version} -X ${pkg}.gitMajor=1 -X ${pkg}.gitMinor=${k8s_minor} -X ${pkg}.gitTreeState=clean"
done
ldflags_etcd="-s -w"
ldflags_kwok="-s -w -X sigs.k8s.io/kwok/pkg/consts.Version=${kwok_version#v}"
# In build order for a full build: the core first, then the rest.
all_binaries=(etcd kube-apiserver dkv-pki kube-controller-manager kube-scheduler kwok kubectl)
# kwok >= 0.8 has no built-in behaviour: these Stage files from its module (what
# `kwokctl` loads for its "fast" nodes, pods and volumes) are copied into
# $out/kwok-stages/ (flat, by base name) next to the binary they belong to.
kwok_stages=(
  node/fast/node-initialize.yaml node/heartbeat-with-lease/node-heartbeat-with-lease.yaml
  pod/fast/pod-ready.yaml pod/fast/pod-complete.yaml pod/fast/pod-delete.yaml
  volume/fast/storage-class.yaml volume/fast/pvc-provision.yaml volume/fast/pv-bind.yaml
  volume/fast/pvc-delete.yaml volume/fast/pv-delete.yaml
)

if (($# > 0)); then wanted=("$@"); else wanted=("${all_binaries[@]}"); fi
for b in "${wanted[@]}"; do
  [[ " ${all_binaries[*]} " == *" $b "* ]] || die "unknown binary '$b' (known: ${all_binaries[*]})"
done

# Everything a binary's build depends on: when it changes, that binary is rebuilt.
# recipe=2: the per-binary cache (and kubectl) replaced one stamp for everything.
recipe_key() { # $1 = binary
  {
    printf 'recipe=2 binary=%s CGO_ENABLED=0 -trimpath\n' "$1"
    case "$1" in
      kwok) cat "$here/kwok/go.mod" "$here/kwok/go.sum"; printf '%s\n%s\n' "$ldflags_kwok" "${kwok_stages[*]}" ;;
      dkv-pki) cat "$here/go.mod" "$here/pki/main.go" ;;
      etcd) cat "$here/go.mod" "$here/go.sum"; printf '%s\n' "$ldflags_etcd" ;;
      *) cat "$here/go.mod" "$here/go.sum"; printf '%s\n' "$ldflags_k8s" ;;
    esac
  } | sha256sum | cut -d' ' -f1
}

build_pki() { # $1 = output file
  (cd "$here" && go build -mod=readonly -trimpath -ldflags "-s -w" -o "$1" ./pki)
}

# ---------------------------------------------------------------- external binaries
if [[ -n "${KUBEBUILDER_ASSETS:-}" || -n "${TEST_ASSET_KUBE_APISERVER:-}${TEST_ASSET_ETCD:-}" ]]; then
  apiserver="${TEST_ASSET_KUBE_APISERVER:-${KUBEBUILDER_ASSETS:+$KUBEBUILDER_ASSETS/kube-apiserver}}"
  etcd="${TEST_ASSET_ETCD:-${KUBEBUILDER_ASSETS:+$KUBEBUILDER_ASSETS/etcd}}"
  [[ -n "$apiserver" && -x "$apiserver" ]] || die "external kube-apiserver not executable: '${apiserver}' (set KUBEBUILDER_ASSETS or TEST_ASSET_KUBE_APISERVER)"
  [[ -n "$etcd" && -x "$etcd" ]] || die "external etcd not executable: '${etcd}' (set KUBEBUILDER_ASSETS or TEST_ASSET_ETCD)"
  apiserver="$(realpath "$apiserver")"; etcd="$(realpath "$etcd")"
  log "using external binaries, not building: kube-apiserver=$apiserver etcd=$etcd"
  if [[ "$(dirname "$apiserver")" == "$(dirname "$etcd")" && -x "$(dirname "$apiserver")/dkv-pki" ]]; then
    echo "$(dirname "$apiserver")"
    exit 0
  fi
  # Assemble a dir with symlinks to the external binaries plus our dkv-pki.
  ext_key="$(printf '%s\n%s\n%s\n' "$apiserver" "$etcd" "$(recipe_key dkv-pki)" | sha256sum | cut -c1-16)"
  out="$cache_root/external-$ext_key"
  mkdir -p "$out"
  ln -sfn "$apiserver" "$out/kube-apiserver"
  ln -sfn "$etcd" "$out/etcd"
  # envtest's asset directories hold kubectl too.
  if [[ -x "$(dirname "$apiserver")/kubectl" ]]; then ln -sfn "$(dirname "$apiserver")/kubectl" "$out/kubectl"; fi
  [[ -x "$out/dkv-pki" ]] || build_pki "$out/dkv-pki" || die "building dkv-pki failed"
  echo "$out"
  exit 0
fi

# ---------------------------------------------------------------- cached build
out="$cache_root/k8s-${k8s_version}-etcd-${etcd_version}-kwok-${kwok_version}"

# The per-binary cache (build-cache.sh's build_stamped) asks these.
stamp_versions() { echo "k8s=${k8s_version} etcd=${etcd_version} kwok=${kwok_version}"; }
hit_also() { [[ "$1" != kwok || -d "$out/kwok-stages" ]]; }

build_command() { # $1 = binary, $2 = output file: sets cmd
  case "$1" in
    etcd) cmd=(go build -mod=readonly -p "$parallelism" -trimpath -ldflags "$ldflags_etcd" -o "$2" go.etcd.io/etcd/server/v3) ;;
    # kwok has a module of its own (./kwok): its k8s.io/* pins differ from the wrapper's.
    kwok) cmd=(go -C "$here/kwok" build -mod=readonly -p "$parallelism" -trimpath -ldflags "$ldflags_kwok" -o "$2" sigs.k8s.io/kwok/cmd/kwok) ;;
    dkv-pki) cmd=(go build -mod=readonly -trimpath -ldflags "-s -w" -o "$2" ./pki) ;;
    *) cmd=(go build -mod=readonly -p "$parallelism" -trimpath -ldflags "$ldflags_k8s" -o "$2" "k8s.io/kubernetes/cmd/$1") ;;
  esac
}

report_built() { # $1 = binary, $2 = file
  case "$1" in
    kubectl) "$2" version --client >&2 ;;
    dkv-pki) ;;
    *) "$2" --version >&2 ;;
  esac
}

# kwok's Stage files, from the module cache, into $out/kwok-stages/ beside the binary.
build_extras() { # $1 = binary
  [[ "$1" == kwok ]] || return 0
  local kwok_src f stages
  stages="$(mktemp -d "$out/.tmp-kwok-stages.XXXXXX")"
  temporaries+=("$stages")
  kwok_src="$(go -C "$here/kwok" list -mod=readonly -m -f '{{.Dir}}' sigs.k8s.io/kwok)"
  [[ -n "$kwok_src" && -d "$kwok_src/kustomize/stage" ]] || die "cannot find kwok's stage files in the module cache ($kwok_src)"
  for f in "${kwok_stages[@]}"; do cp "$kwok_src/kustomize/stage/$f" "$stages/" || die "kwok ${kwok_version} has no kustomize/stage/$f"; done
  chmod -R u+w "$stages"
  rm -rf "$out/kwok-stages" && mv "$stages" "$out/kwok-stages"
}

build_stamped "$out" "${wanted[@]}"
