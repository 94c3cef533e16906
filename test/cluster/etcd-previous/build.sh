#!/usr/bin/env bash
# Builds the etcd release before the control plane's (./go.mod pins it: the
# previous v3.6.x patch) from the Go module proxy into a version-keyed cache
# directory outside git: the "old" image of the real node's upgrade scenario
# (test/node/scenarios.test.ts), whose "new" image is the control plane's etcd.
# Its own module so that its pins never move the control plane's. Same flags as
# ../build.sh's etcd. Idempotent: a second run is a cache hit. The LAST line on
# stdout is the directory holding `etcd`.
set -euo pipefail
here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
source "$here/../build-cache.sh"
etcd_version="$(modver go.etcd.io/etcd/server/v3)"
[[ -n "$etcd_version" ]] || { echo "etcd-previous: cannot read the etcd version from $here/go.mod" >&2; exit 1; }
ldflags="-s -w"
out="$cache_root/etcd-${etcd_version}-$(content_key "$ldflags")"

built() { [[ -x "$1/etcd" ]]; }
build_into() {
  echo "etcd-previous: building etcd ${etcd_version} into $out ..." >&2
  (cd "$here" && go build -mod=readonly -p "${DKV_BUILD_PARALLELISM:-2}" -trimpath -ldflags "$ldflags" -o "$1/etcd" go.etcd.io/etcd/server/v3)
  "$1/etcd" --version >&2
}
cached_build etcd-previous "$out" built build_into
