#!/usr/bin/env bash
# Builds a cert-manager controller for the tests from the Go module proxy, into a
# version-keyed cache directory outside git (../build-cache.sh): ./main.go wires
# cert-manager's own registered controllers (the CA issuer, the Issuer and
# ClusterIssuer controllers and the Certificate controllers) as its app does;
# cert-manager's main package (cmd/controller) is a module of its own that the
# proxy does not serve. Its own module (./go.mod, github.com/cert-manager/cert-manager
# at the version of the CRDs under api/crds/cert-manager/), so that its dependencies
# never move the control plane's pins. Idempotent: a second run is a cache hit.
# The LAST line on stdout is the directory holding `cert-manager-controller`;
# progress and the build time go to stderr and to its .stamp.
set -euo pipefail
here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
source "$here/../build-cache.sh"
version="$(modver github.com/cert-manager/cert-manager)"
[[ -n "$version" ]] || { echo "cert-manager: cannot read the github.com/cert-manager/cert-manager version from $here/go.mod" >&2; exit 1; }
key="$(content_key "$(cat "$here/main.go")" "CGO_ENABLED=0 -trimpath -s -w")"
out="$cache_root/cert-manager-${version}-${key}"

built() { [[ -x "$1/cert-manager-controller" ]] && grep -qx "binary=cert-manager-controller" "$1/.stamp" 2>/dev/null; }
build_into() {
  local t0=$SECONDS
  echo "cert-manager: building the controller ${version} ..." >&2
  (cd "$here" && go build -mod=readonly -p "${DKV_BUILD_PARALLELISM:-2}" -trimpath -ldflags "-s -w" -o "$1/cert-manager-controller" .)
  echo "cert-manager: built in $((SECONDS - t0))s" >&2
  printf 'binary=cert-manager-controller\ncert-manager-controller %s built in %ss on %s with %s\n' "$version" "$((SECONDS - t0))" "$(date -u +%Y-%m-%dT%H:%M:%SZ)" "$(go env GOVERSION)" >"$1/.stamp"
}

mkdir -p "$cache_root"
# One build at a time: an overlapping run waits, then finds the binary built.
exec 9>"$cache_root/.cert-manager-build.lock"
command -v flock >/dev/null && flock 9
cached_build cert-manager "$out" built build_into
