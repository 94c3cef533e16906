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
cache_root="${DKV_CONTROL_PLANE_CACHE:-${HOME}/.cache/dkv-control-plane}"
export GOTOOLCHAIN=local CGO_ENABLED=0
modver() { awk -v m="$1" '$1 == m && $2 ~ /^v/ { print $2; exit }' "$here/go.mod"; }
versitygw_version="$(modver github.com/versity/versitygw)"
etcdutl_version="$(modver go.etcd.io/etcd/etcdutl/v3)"
[[ -n "$versitygw_version" && -n "$etcdutl_version" ]] || { echo "backup-tools: cannot read versions from $here/go.mod" >&2; exit 1; }
key="$(cat "$here/go.mod" "$here/go.sum" | sha256sum | cut -c1-12)"
out="$cache_root/backup-tools-versitygw-${versitygw_version}-etcdutl-${etcdutl_version}-${key}"
if [[ -x "$out/versitygw" && -x "$out/etcdutl" ]]; then
  echo "backup-tools: cache hit: $out" >&2
  echo "$out"
  exit 0
fi
echo "backup-tools: building versitygw ${versitygw_version} and etcdutl ${etcdutl_version} into $out ..." >&2
mkdir -p "$cache_root"
tmp="$(mktemp -d "$cache_root/.tmp-backup-tools.XXXXXX")"
trap 'rm -rf "$tmp"' EXIT
build() { (cd "$here" && go build -mod=readonly -p "${DKV_BUILD_PARALLELISM:-2}" -trimpath -ldflags "-s -w" -o "$tmp/$1" "$2"); }
build versitygw github.com/versity/versitygw/cmd/versitygw
build etcdutl go.etcd.io/etcd/etcdutl/v3
chmod 755 "$tmp"
rm -rf "$out"
mv "$tmp" "$out"
trap - EXIT
echo "$out"
