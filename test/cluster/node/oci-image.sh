#!/usr/bin/env bash
# Assembles a one-layer OCI image archive from local files, for
# `ctr -n k8s.io images import`: no registry is reachable, so the node's images
# (the pod sandbox's pause, etcd from the etcd binary the harness builds, later the
# project's own) are made here from files already on this machine.
#
# Usage: oci-image.sh OUT.tar NAME [option...]
#   NAME                    the image reference the manifests use (registry.k8s.io/etcd:3.6.8-0);
#                           written as io.containerd.image.name and org.opencontainers.image.ref.name
#   --file SRC:DEST[:MODE]  a file in the image (DEST absolute; MODE octal, default 0755)
#   --dir DEST[:MODE]       an empty directory in the image (default 0755; 1777 for /tmp)
#   --tree SRC:DEST         a directory and everything in it, modes kept (the project's
#                           lib/ and node_modules/ packages)
#   --user UID[:GID]        config.User
#   --entrypoint ARG        config.Entrypoint (repeatable: ["node", "/app/bin/dkv.js"] is two)
#   --cmd ARG               config.Cmd (repeatable)
#   --workdir DIR           config.WorkingDir
#   --env NAME=VALUE        config.Env (repeatable)
#
# The archive is an OCI image layout (oci-layout, index.json, blobs/sha256/…) with
# one uncompressed layer: files owned by 0:0, mtime 0, sorted, so the same inputs
# give the same digests. What differs from a `docker build`: no base image (no
# /etc/passwd, no shell, no CA bundle unless given with --file), one layer, no
# history entries. Needs GNU tar, sha256sum, python3 (JSON) — all in Debian's base.
set -euo pipefail
die() { printf 'oci-image.sh: ERROR: %s\n' "$*" >&2; exit 1; }
(($# >= 2)) || die "usage: oci-image.sh OUT.tar NAME [--file SRC:DEST[:MODE]] [--dir DEST[:MODE]] [--tree SRC:DEST] [--user U] [--entrypoint P] [--cmd A] [--workdir D] [--env K=V]"
out="$1" name="$2"; shift 2

work="$(mktemp -d)"
trap 'rm -rf "$work"' EXIT
root="$work/rootfs"
mkdir -p "$root" "$work/layout/blobs/sha256"
config_args=()
while (($# > 0)); do
  case "$1" in
    --file)
      IFS=: read -r src dest mode <<<"$2"
      [[ -f "$src" ]] || die "--file $2: no file $src"
      [[ "$dest" == /* ]] || die "--file $2: destination must be absolute"
      install -D -m "${mode:-0755}" "$src" "$root$dest" ;;
    --dir)
      IFS=: read -r dest mode <<<"$2"
      mkdir -p "$root$dest" && chmod "${mode:-0755}" "$root$dest" ;;
    --tree)
      IFS=: read -r src dest <<<"$2"
      [[ -d "$src" ]] || die "--tree $2: no directory $src"
      [[ "$dest" == /* ]] || die "--tree $2: destination must be absolute"
      mkdir -p "$(dirname "$root$dest")" && cp -R --preserve=mode "$src" "$root$dest" ;;
    --user | --entrypoint | --cmd | --workdir | --env) config_args+=("$1" "$2") ;;
    *) die "unknown option $1" ;;
  esac
  shift 2
done

# Parent directories made by install/mkdir get the umask's mode: make them 0755.
find "$root" -mindepth 1 -type d ! -perm -1000 -exec chmod 0755 {} +
layer="$work/layer.tar"
(cd "$root" && tar --sort=name --owner=0 --group=0 --numeric-owner --mtime=@0 --format=posix \
  --pax-option=exthdr.name=%d/PaxHeaders/%f,delete=atime,delete=ctime -cf "$layer" -- $(ls -A))

python3 - "$work" "$name" "${config_args[@]}" <<'EOF'
import hashlib, json, os, sys
work, name, args = sys.argv[1], sys.argv[2], sys.argv[3:]
blobs = os.path.join(work, 'layout', 'blobs', 'sha256')
def blob(data: bytes) -> tuple[str, int]:
    digest = hashlib.sha256(data).hexdigest()
    with open(os.path.join(blobs, digest), 'wb') as f:
        f.write(data)
    return 'sha256:' + digest, len(data)
def layer_blob(path: str) -> tuple[str, int]:
    # Hashed in chunks and moved, not read whole and copied: the project's layer is ~280 MB.
    h = hashlib.sha256()
    with open(path, 'rb') as f:
        for chunk in iter(lambda: f.read(1 << 20), b''):
            h.update(chunk)
    size = os.path.getsize(path)
    os.rename(path, os.path.join(blobs, h.hexdigest()))
    return 'sha256:' + h.hexdigest(), size
layer_digest, layer_size = layer_blob(os.path.join(work, 'layer.tar'))
config = {'Env': [], 'Cmd': None}
for flag, value in zip(args[0::2], args[1::2]):
    if flag == '--user': config['User'] = value
    elif flag == '--entrypoint': config['Entrypoint'] = config.get('Entrypoint', []) + [value]
    elif flag == '--cmd': config['Cmd'] = (config['Cmd'] or []) + [value]
    elif flag == '--workdir': config['WorkingDir'] = value
    elif flag == '--env': config['Env'].append(value)
config = {k: v for k, v in config.items() if v}
image_config = {
    'architecture': 'amd64', 'os': 'linux', 'config': config,
    'rootfs': {'type': 'layers', 'diff_ids': [layer_digest]},
}
config_digest, config_size = blob(json.dumps(image_config, sort_keys=True, separators=(',', ':')).encode())
manifest = {
    'schemaVersion': 2, 'mediaType': 'application/vnd.oci.image.manifest.v1+json',
    'config': {'mediaType': 'application/vnd.oci.image.config.v1+json', 'digest': config_digest, 'size': config_size},
    'layers': [{'mediaType': 'application/vnd.oci.image.layer.v1.tar', 'digest': layer_digest, 'size': layer_size}],
}
manifest_digest, manifest_size = blob(json.dumps(manifest, sort_keys=True, separators=(',', ':')).encode())
index = {
    'schemaVersion': 2, 'mediaType': 'application/vnd.oci.image.index.v1+json',
    'manifests': [{
        'mediaType': 'application/vnd.oci.image.manifest.v1+json', 'digest': manifest_digest, 'size': manifest_size,
        'platform': {'architecture': 'amd64', 'os': 'linux'},
        'annotations': {'io.containerd.image.name': name, 'org.opencontainers.image.ref.name': name},
    }],
}
with open(os.path.join(work, 'layout', 'index.json'), 'w') as f:
    json.dump(index, f, sort_keys=True, separators=(',', ':'))
with open(os.path.join(work, 'layout', 'oci-layout'), 'w') as f:
    json.dump({'imageLayoutVersion': '1.0.0'}, f)
EOF

mkdir -p "$(dirname "$out")"
(cd "$work/layout" && tar --sort=name --owner=0 --group=0 --numeric-owner --mtime=@0 -cf "$out.tmp" oci-layout index.json blobs)
mv -f "$out.tmp" "$out"
printf '%s\n' "$out"
