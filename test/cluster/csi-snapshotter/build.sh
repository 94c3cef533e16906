#!/usr/bin/env bash
# Builds the real CSI snapshot controller (snapshot-controller, from
# github.com/kubernetes-csi/external-snapshotter/v8, built from the Go module
# proxy) and copies its three VolumeSnapshot CRDs
#   snapshot.storage.k8s.io_volumesnapshotclasses.yaml
#   snapshot.storage.k8s.io_volumesnapshotcontents.yaml
#   snapshot.storage.k8s.io_volumesnapshots.yaml
# (from the client/v8 module's config/crd/) into crds/ of a version-keyed cache
# directory outside git. Idempotent: a second run is a cache hit. The LAST line
# on stdout is the output directory (snapshot-controller, crds/).
#
# Why: tests of anything that takes VolumeSnapshots should see the real
# controller's protocol (the VolumeSnapshotContent it creates, its finalizers
# and annotations, the status it copies back, deletion) rather than a fake of
# it. The parts that no component can play without a kubelet and a CSI driver
# (the driver, the csi-snapshotter sidecar, external-provisioner) are played
# by test/support/csi-snapshots.ts (TestCsiDriver). See README.md here.
#
# Its own module (./go.mod) so that its k8s.io/* v0.37 pins never move the
# control plane's. The client/v8 module is required at the same version as the
# controller: upstream builds with `replace client/v8 => ./client`, which a
# dependent module does not inherit.
#
# Build time, measured on 2 cores / go1.26.8 with an empty Go build cache
# (standard library included) while other tests ran on the machine: 208 s wall,
# peak RSS 1.4 GiB, 1.6 GiB of Go build cache; with the packages already in the
# Go build cache 5 s; a cache hit ~10 ms. The binary is ~70 MB.
#
# Environment: DKV_CONTROL_PLANE_CACHE (cache root, default
# $HOME/.cache/dkv-control-plane), DKV_BUILD_PARALLELISM (go build -p, default 2).
set -euo pipefail
here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
source "$here/../build-cache.sh"
version="$(modver github.com/kubernetes-csi/external-snapshotter/v8)"
client_version="$(modver github.com/kubernetes-csi/external-snapshotter/client/v8)"
[[ -n "$version" && -n "$client_version" ]] || { echo "csi-snapshotter: cannot read versions from $here/go.mod" >&2; exit 1; }
crds=(snapshot.storage.k8s.io_volumesnapshotclasses.yaml snapshot.storage.k8s.io_volumesnapshotcontents.yaml snapshot.storage.k8s.io_volumesnapshots.yaml)
ldflags="-s -w -X main.version=${version}"
out="$cache_root/csi-snapshotter-${version}-$(content_key "$ldflags" "${crds[*]}")"

built() {
  [[ -x "$1/snapshot-controller" ]] || return 1
  local c
  for c in "${crds[@]}"; do [[ -f "$1/crds/$c" ]] || return 1; done
}
build_into() {
  local start=$SECONDS client_dir c
  echo "csi-snapshotter: building snapshot-controller ${version} (CRDs from client/v8 ${client_version}) into $out ..." >&2
  (cd "$here" && go build -mod=readonly -p "${DKV_BUILD_PARALLELISM:-2}" -trimpath -ldflags "$ldflags" \
    -o "$1/snapshot-controller" github.com/kubernetes-csi/external-snapshotter/v8/cmd/snapshot-controller)
  client_dir="$(cd "$here" && go list -mod=readonly -m -f '{{.Dir}}' github.com/kubernetes-csi/external-snapshotter/client/v8)"
  [[ -n "$client_dir" && -d "$client_dir/config/crd" ]] || { echo "csi-snapshotter: no config/crd in the client/v8 module ($client_dir)" >&2; exit 1; }
  mkdir "$1/crds"
  for c in "${crds[@]}"; do install -m 644 "$client_dir/config/crd/$c" "$1/crds/$c"; done
  echo "csi-snapshotter: built in $((SECONDS - start)) s" >&2
}
cached_build csi-snapshotter "$out" built build_into
