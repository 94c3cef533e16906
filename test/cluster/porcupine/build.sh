#!/usr/bin/env bash
# Builds dkv-linearizability (./main.go: porcupine, github.com/anishathalye/porcupine,
# the linearizability checker etcd's own robustness tests use) from the Go module
# proxy into a version-keyed cache directory outside git. Its own module (./go.mod),
# so that its pins never move the control plane's. Idempotent: a second run is a
# cache hit. The LAST line on stdout is the directory holding the binary.
set -euo pipefail
here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
source "$here/../build-cache.sh"
porcupine_version="$(modver github.com/anishathalye/porcupine)"
[[ -n "$porcupine_version" ]] || { echo "porcupine: cannot read its version from $here/go.mod" >&2; exit 1; }
out="$cache_root/porcupine-${porcupine_version}-$(content_key "$(cat "$here/main.go")")"

built() { [[ -x "$1/dkv-linearizability" ]]; }
build_into() {
  echo "porcupine: building dkv-linearizability with porcupine ${porcupine_version} into $out ..." >&2
  (cd "$here" && go build -mod=readonly -trimpath -ldflags "-s -w" -o "$1/dkv-linearizability" .)
}
cached_build porcupine "$out" built build_into
