#!/usr/bin/env bash
# Builds the real components the backup tests need, from the Go module proxy,
# into a version-keyed cache directory outside git:
#   versitygw  an S3-compatible server with a plain-directory (posix) backend;
#   etcdutl    etcd's offline tool, which restores a snapshot into a data directory
#              (the same release as the etcd the control plane builds).
# Their own module (./go.mod) so that their dependencies never move the control
# plane's pins. Idempotent: a second run is a cache hit. The LAST line on stdout
# is the directory holding both binaries.
#
# Why versitygw: it builds with `go build` from the module proxy in about a
# minute (MinIO's server is far larger and no longer published as a module
# release; rclone's `serve s3` pulls every rclone backend), keeps objects as
# files in one directory, and implements multipart uploads, ListObjectsV2 and
# DeleteObjects, which is what `dkv backup` uses.
set -euo pipefail
here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
source "$here/../build-cache.sh"
versitygw_version="$(modver github.com/versity/versitygw)"
etcdutl_version="$(modver go.etcd.io/etcd/etcdutl/v3)"
[[ -n "$versitygw_version" && -n "$etcdutl_version" ]] || { echo "backup-tools: cannot read versions from $here/go.mod" >&2; exit 1; }
out="$cache_root/backup-tools-versitygw-${versitygw_version}-etcdutl-${etcdutl_version}-$(content_key)"

built() { [[ -x "$1/versitygw" && -x "$1/etcdutl" ]]; }
go_build() { (cd "$here" && go build -mod=readonly -p "${DKV_BUILD_PARALLELISM:-2}" -trimpath -ldflags "-s -w" -o "$1" "$2"); }
build_into() {
  echo "backup-tools: building versitygw ${versitygw_version} and etcdutl ${etcdutl_version} into $out ..." >&2
  go_build "$1/versitygw" github.com/versity/versitygw/cmd/versitygw
  go_build "$1/etcdutl" go.etcd.io/etcd/etcdutl/v3
}
cached_build backup-tools "$out" built build_into
