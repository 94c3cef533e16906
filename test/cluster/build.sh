#!/usr/bin/env bash
# Builds a local Kubernetes control plane (kube-apiserver + etcd), the components
# of the optional "with nodes" mode (kube-controller-manager, kube-scheduler, kwok)
# and the dkv-pki helper from the Go module proxy into a version-keyed cache
# directory outside git. Idempotent: a second run is a cache hit. The LAST line on
# stdout is always the directory holding the binaries (usable as KUBEBUILDER_ASSETS).
# Progress and notes go to stderr. See README.md.
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
cache_root="${DKV_CONTROL_PLANE_CACHE:-${HOME}/.cache/dkv-control-plane}"
parallelism="${DKV_BUILD_PARALLELISM:-2}"
export GOTOOLCHAIN=local CGO_ENABLED=0

log() { printf 'build.sh: %s\n' "$*" >&2; }
die() { log "ERROR: $*"; exit 1; }

modver() { # version of a required module, read from a go.mod (no network, no go invocation)
  awk -v m="$1" '$1 == m && $2 ~ /^v/ { print $2; exit }' "${2:-$here/go.mod}"
}
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
k8s_binaries=(kube-apiserver kube-controller-manager kube-scheduler)
# kwok >= 0.8 has no built-in behaviour: these Stage files from its module (what
# `kwokctl` loads for its "fast" nodes, pods and volumes) are copied into
# $out/kwok-stages/ (flat, by base name) next to the binary they belong to.
kwok_stages=(
  node/fast/node-initialize.yaml node/heartbeat-with-lease/node-heartbeat-with-lease.yaml
  pod/fast/pod-ready.yaml pod/fast/pod-complete.yaml pod/fast/pod-delete.yaml
  volume/fast/storage-class.yaml volume/fast/pvc-provision.yaml volume/fast/pv-bind.yaml
  volume/fast/pvc-delete.yaml volume/fast/pv-delete.yaml
)

# Everything that should trigger a rebuild when it changes.
recipe_key="$(
  {
    cat "$here/go.mod" "$here/go.sum" "$here/pki/main.go" "$here/kwok/go.mod" "$here/kwok/go.sum"
    printf 'CGO_ENABLED=0 -trimpath\n%s\n%s\n%s\n%s\n%s\n' "$ldflags_k8s" "$ldflags_etcd" "$ldflags_kwok" "${k8s_binaries[*]}" "${kwok_stages[*]}"
  } | sha256sum | cut -d' ' -f1
)"

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
  ext_key="$(printf '%s\n%s\n%s\n' "$apiserver" "$etcd" "$recipe_key" | sha256sum | cut -c1-16)"
  out="$cache_root/external-$ext_key"
  mkdir -p "$out"
  ln -sfn "$apiserver" "$out/kube-apiserver"
  ln -sfn "$etcd" "$out/etcd"
  [[ -x "$out/dkv-pki" ]] || build_pki "$out/dkv-pki" || die "building dkv-pki failed"
  echo "$out"
  exit 0
fi

# ---------------------------------------------------------------- cached build
out="$cache_root/k8s-${k8s_version}-etcd-${etcd_version}-kwok-${kwok_version}"
stamp="$out/.stamp"

cache_hit() {
  [[ "${DKV_CONTROL_PLANE_REBUILD:-0}" != 1 && -f "$stamp" ]] || return 1
  local b
  for b in "${k8s_binaries[@]}" etcd kwok dkv-pki; do [[ -x "$out/$b" ]] || return 1; done
  [[ -d "$out/kwok-stages" ]] || return 1
  grep -qx "key=$recipe_key" "$stamp"
}

if cache_hit; then
  log "cache hit: $out"
  echo "$out"
  exit 0
fi

command -v go >/dev/null || die "go not found in PATH (Go >= 1.26 needed)"
mkdir -p "$cache_root"
# Serialise concurrent builds (e.g. parallel test jobs); re-check after taking the lock.
exec 9>"$cache_root/.build.lock"
if command -v flock >/dev/null; then
  log "waiting for build lock $cache_root/.build.lock"
  flock 9
  if cache_hit; then log "cache hit (built concurrently): $out"; echo "$out"; exit 0; fi
fi

tmp="$(mktemp -d "$cache_root/.tmp-build.XXXXXX")"
chmod 755 "$tmp"
trap 'rm -rf "$tmp"' EXIT
build_log="$tmp/build.log"
timer=()
if [[ -x /usr/bin/time ]]; then timer=(/usr/bin/time -v -a -o "$build_log"); fi

run_step() { # name, then the command; time + peak RSS of each step go to build.log
  local name="$1"; shift
  local t0=$SECONDS
  log "building $name ..."
  echo "=== $name: $*" >>"$build_log"
  "${timer[@]}" "$@" || die "building $name failed (see output above)"
  log "built $name in $((SECONDS - t0))s"
  echo "=== $name wall seconds: $((SECONDS - t0))" >>"$build_log"
}

log "building ${k8s_binaries[*]} ${k8s_version} + etcd ${etcd_version} + kwok ${kwok_version} into $out (go build -p $parallelism; first build takes several minutes)"
start=$SECONDS
cd "$here"
# One binary per `go build` (not one multi-target build): only one big link at a time keeps peak memory down.
for b in "${k8s_binaries[@]}"; do
  run_step "$b" go build -mod=readonly -p "$parallelism" -trimpath -ldflags "$ldflags_k8s" \
    -o "$tmp/$b" "k8s.io/kubernetes/cmd/$b"
done
run_step etcd go build -mod=readonly -p "$parallelism" -trimpath -ldflags "$ldflags_etcd" \
  -o "$tmp/etcd" go.etcd.io/etcd/server/v3
# kwok has a module of its own (./kwok): its k8s.io/* pins differ from the wrapper's.
run_step kwok go -C "$here/kwok" build -mod=readonly -p "$parallelism" -trimpath -ldflags "$ldflags_kwok" \
  -o "$tmp/kwok" sigs.k8s.io/kwok/cmd/kwok
run_step dkv-pki go build -mod=readonly -trimpath -ldflags "-s -w" -o "$tmp/dkv-pki" ./pki
kwok_src="$(go -C "$here/kwok" list -mod=readonly -m -f '{{.Dir}}' sigs.k8s.io/kwok)"
[[ -n "$kwok_src" && -d "$kwok_src/kustomize/stage" ]] || die "cannot find kwok's stage files in the module cache ($kwok_src)"
mkdir "$tmp/kwok-stages"
for f in "${kwok_stages[@]}"; do cp "$kwok_src/kustomize/stage/$f" "$tmp/kwok-stages/" || die "kwok ${kwok_version} has no kustomize/stage/$f"; done
chmod -R u+w "$tmp/kwok-stages"
total=$((SECONDS - start))

for b in "${k8s_binaries[@]}" etcd kwok; do "$tmp/$b" --version >&2; done

{
  echo "=== total wall seconds: $total"
  echo "=== summary (per step: wall clock, peak RSS of the largest single process):"
  grep -E '^=== [a-z-]+: |Elapsed \(wall|Maximum resident' "$build_log" | sed 's/^\t/    /' || true
} >>"$build_log"
{
  echo "key=$recipe_key"
  echo "k8s=$k8s_version"
  echo "etcd=$etcd_version"
  echo "kwok=$kwok_version"
  echo "go=$(go env GOVERSION)"
  echo "built=$(date -u +%Y-%m-%dT%H:%M:%SZ) in ${total}s"
} >"$tmp/.stamp"

# Install atomically-ish: replace the versioned dir with the fresh build.
rm -rf "$out.old"
[[ -e "$out" ]] && mv "$out" "$out.old"
mv "$tmp" "$out"
trap - EXIT
rm -rf "$out.old"
log "done in ${total}s; build log: $out/build.log"
echo "$out"
