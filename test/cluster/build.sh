#!/usr/bin/env bash
# Builds a local Kubernetes control plane (kube-apiserver + etcd) and the dkv-pki
# helper from the Go module proxy into a version-keyed cache directory outside git.
# Idempotent: a second run is a cache hit. The LAST line on stdout is always the
# directory holding kube-apiserver, etcd and dkv-pki (usable as KUBEBUILDER_ASSETS).
# Progress and notes go to stderr. See README.md.
#
# Environment:
#   DKV_CONTROL_PLANE_CACHE  cache root (default: $HOME/.cache/dkv-control-plane)
#   DKV_CONTROL_PLANE_REBUILD=1  ignore the stamp and rebuild
#   DKV_BUILD_PARALLELISM    go build -p (default 2; use 1 on machines with < 6 GiB RAM)
#   KUBEBUILDER_ASSETS       dir with kube-apiserver and etcd: skip building them
#   TEST_ASSET_KUBE_APISERVER + TEST_ASSET_ETCD  binary paths: skip building them
set -euo pipefail

here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
cache_root="${DKV_CONTROL_PLANE_CACHE:-${HOME}/.cache/dkv-control-plane}"
parallelism="${DKV_BUILD_PARALLELISM:-2}"
export GOTOOLCHAIN=local CGO_ENABLED=0

log() { printf 'build.sh: %s\n' "$*" >&2; }
die() { log "ERROR: $*"; exit 1; }

modver() { # version of a required module, read from go.mod (no network, no go invocation)
  awk -v m="$1" '$1 == m && $2 ~ /^v/ { print $2; exit }' "$here/go.mod"
}
k8s_version="$(modver k8s.io/kubernetes)"
etcd_version="$(modver go.etcd.io/etcd/server/v3)"
[[ -n "$k8s_version" && -n "$etcd_version" ]] || die "cannot read k8s.io/kubernetes / etcd versions from $here/go.mod"

k8s_minor="${k8s_version#v1.}"; k8s_minor="${k8s_minor%%.*}"
ldflags_k8s="-s -w"
for pkg in k8s.io/component-base/version k8s.io/client-go/pkg/version; do
  ldflags_k8s+=" -X ${pkg}.gitVersion=${k8s_version} -X ${pkg}.gitMajor=1 -X ${pkg}.gitMinor=${k8s_minor} -X ${pkg}.gitTreeState=clean"
done
ldflags_etcd="-s -w"

# Everything that should trigger a rebuild when it changes.
recipe_key="$(
  {
    cat "$here/go.mod" "$here/go.sum" "$here/pki/main.go"
    printf 'CGO_ENABLED=0 -trimpath\n%s\n%s\n' "$ldflags_k8s" "$ldflags_etcd"
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
out="$cache_root/k8s-${k8s_version}-etcd-${etcd_version}"
stamp="$out/.stamp"

cache_hit() {
  [[ "${DKV_CONTROL_PLANE_REBUILD:-0}" != 1 ]] &&
    [[ -x "$out/kube-apiserver" && -x "$out/etcd" && -x "$out/dkv-pki" && -f "$stamp" ]] &&
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

log "building kube-apiserver ${k8s_version} + etcd ${etcd_version} into $out (go build -p $parallelism; first build takes several minutes)"
start=$SECONDS
cd "$here"
run_step kube-apiserver go build -mod=readonly -p "$parallelism" -trimpath -ldflags "$ldflags_k8s" \
  -o "$tmp/kube-apiserver" k8s.io/kubernetes/cmd/kube-apiserver
run_step etcd go build -mod=readonly -p "$parallelism" -trimpath -ldflags "$ldflags_etcd" \
  -o "$tmp/etcd" go.etcd.io/etcd/server/v3
run_step dkv-pki go build -mod=readonly -trimpath -ldflags "-s -w" -o "$tmp/dkv-pki" ./pki
total=$((SECONDS - start))

"$tmp/kube-apiserver" --version >&2
"$tmp/etcd" --version >&2

{
  echo "=== total wall seconds: $total"
  echo "=== summary (per step: wall clock, peak RSS of the largest single process):"
  grep -E '^=== [a-z-]+: |Elapsed \(wall|Maximum resident' "$build_log" | sed 's/^\t/    /' || true
} >>"$build_log"
{
  echo "key=$recipe_key"
  echo "k8s=$k8s_version"
  echo "etcd=$etcd_version"
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
